#include "recorder/call_probe.h"

#include <signal.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "bpf/abi/call.h"
#include "recorder/attach_log.h"
#include "recorder/kernel_probe.h"
#include "recorder/log.h"
#include "recorder/options.h"
#include "recorder/process_table.h"
#include "recorder/ring_poller.h"
#include "recorder/uprobe_multi.h"
#include "rscore/clock.h"

namespace rs::rec {

CallProbe::~CallProbe() {
  Shutdown();
  Unload();
}

void CallProbe::Shutdown() {
  attacher_.reset();  // links before the programs they point to
  if (lib_mmap_link_) bpf_link__destroy(lib_mmap_link_);
  lib_mmap_link_ = nullptr;
}

void CallProbe::Unload() {
  if (destroy_skeleton_) destroy_skeleton_();
  destroy_skeleton_ = nullptr;
}

std::array<DropReason, 4> CallProbe::DropReasons() const {
  const int fd = bpf_map__fd(skel_.stats);
  return {{{"ring_full", SumPerCpuU64(fd, CALL_STAT_RB_FULL)},
           {"lost_entry", SumPerCpuU64(fd, CALL_STAT_LOST_ENTRY)},
           {"stale_entry", SumPerCpuU64(fd, CALL_STAT_STALE_ENTRY)},
           {"undecodable", bad_events_ + decode_drops()}}};
}

uint64_t CallProbe::drops() const {
  if (finished_ || !skel_.stats) return final_drops_;
  uint64_t n = 0;
  for (const DropReason& r : DropReasons()) n += r.count;
  return n;
}

void CallProbe::PrepareLoad(const LoadOptions& opts, bpf_program* entry, bpf_program* ret,
                            bpf_program* lib_mmap, char (&prefix_field)[16],
                            std::string_view prefix) {
  if (opts.uprobe_multi) {
    PrepareUprobeMulti(entry);
    PrepareUprobeMulti(ret);
  }
  bpf_program__set_autoload(lib_mmap, opts.lib_mmap);
  std::memset(prefix_field, 0, sizeof(prefix_field));
  std::memcpy(prefix_field, prefix.data(), std::min(prefix.size(), sizeof(prefix_field) - 1));
}

// uprobe_multi links where the kernel has them (Linux 6.6+; detaching is fast), else one
// perf-event uprobe per function: decided by trying. The library-load program is optional:
// a kernel that rejects it (no syscall tracepoints) loads the probe without it, and so does
// --no-load-tracepoint.
rs::Result<bool> CallProbe::LoadBest(RecorderContext& ctx) {
  std::string error;
  for (bool lib_mmap : {true, false}) {
    if (lib_mmap && !load_tracepoint_) continue;
    LoadOptions opts{.filter_pids = filter_pids_, .uprobe_multi = true, .lib_mmap = lib_mmap};
    if (uprobe_multi_allowed_) {
      if (auto loaded = Load(ctx, opts); loaded.ok()) {
        skel_ = loaded.value();
        if (UprobeMultiWorks(skel_.entry)) return true;
      }
      Unload();
    }
    opts.uprobe_multi = false;
    auto loaded = Load(ctx, opts);
    if (loaded.ok()) {
      skel_ = loaded.value();
      return false;
    }
    Unload();
    if (error.empty()) error = loaded.error().message();
    lib_mmap_error_ = loaded.error().message();
  }
  return rs::Error(error);
}

rs::Result<void> CallProbe::Start(RecorderContext& ctx) {
  ctx_ = &ctx;
  symbolizer_ = std::make_unique<CallerSymbolizer>(ctx.proc_root);
  filter_pids_ = ctx.options && !ctx.options->pids.empty();
  load_tracepoint_ = !ctx.options || ctx.options->load_tracepoint;
  ASSIGN_OR_RETURN(const bool multi, LoadBest(ctx));
  const std::string name(source());
  if (filter_pids_) {
    for (int pid : ctx.options->pids) OnProcessTraced(ctx, pid);
  }
  if (auto r = ctx.poller->Add(bpf_map__fd(skel_.events), &CallProbe::SampleThunk, this); !r.ok()) {
    return r.error().Wrap(name);
  }
  attacher_ = std::make_unique<LibraryAttacher>(
      Kinds(), [this](LibraryKind k) { return Functions(k); }, skel_.entry, skel_.ret, multi);
  attacher_->Start(ctx, ctx.options ? ExplicitLibraries(*ctx.options) : std::vector<std::string>{});
  method_ = multi ? "uprobe_multi" : "uprobe";
  AttachLibMmap(ctx);
  return rs::Ok();
}

void CallProbe::AttachLibMmap(RecorderContext& ctx) {
  const std::string target = "syscalls/sys_enter_mmap";
  std::string error;
  if (!load_tracepoint_) {
    error = "not attached: --no-load-tracepoint";
  } else if (!skel_.lib_mmap) {
    error = "left out: the kernel rejected the program (" + lib_mmap_error_ + ")";
  } else if (auto r = ctx.poller->Add(bpf_map__fd(skel_.lib_maps), &CallProbe::LibMapThunk, this,
                                      RingPoller::Delivery::kUrgent);
             !r.ok()) {
    error = r.error().message();
  } else {
    lib_mmap_link_ = bpf_program__attach(skel_.lib_mmap);
    if (!lib_mmap_link_) error = std::strerror(errno);
  }
  // Without it, libraries loaded later are still found by the rescans, only later.
  if (ctx.attach_log) {
    ctx.attach_log->Record("tracepoint", target, std::string(source()) + " library loads",
                           error.empty(), error);
  }
}

void CallProbe::Consume() {
  if (ctx_ && ctx_->poller) ctx_->poller->Consume();
}

void CallProbe::Tick(RecorderContext& ctx) {
  if (!attacher_) return;
  attacher_->Tick(ctx, rs::MonotonicNowNs() / 1'000'000);
  Consume();  // the BPF side wakes the poller only when much is pending
}

void CallProbe::OnProcessExec(RecorderContext& /*ctx*/, const ProcessExec& exec) {
  if (!attacher_) return;
  attacher_->Watch(exec.pid, rs::MonotonicNowNs() / 1'000'000);
  // Rows of the old image first; then forget its state and mappings. The new image's calls
  // may have been decoded already (its first communicators): the decoder keeps what they made.
  Consume();
  ForgetProcess(exec.pid, exec.mono_ns);
  symbolizer_->Forget(exec.pid);
}

void CallProbe::OnProcessTraced(RecorderContext& /*ctx*/, int pid) {
  if (!filter_pids_ || !skel_.pids) return;
  uint32_t key = static_cast<uint32_t>(pid);
  uint8_t one = 1;
  bpf_map__update_elem(skel_.pids, &key, sizeof(key), &one, sizeof(one), BPF_ANY);
}

// A process is mapping a probed library's code: scan it now (and on the next ticks, should
// its mapping not be listed yet). Runs on the loop thread, like every ring callback.
int CallProbe::LibMapThunk(void* self, void* data, size_t size) {
  auto* probe = static_cast<CallProbe*>(self);
  // Not once recording is ending: the probes are being detached (this probe's last Consume,
  // or another probe's Finish, may still hold reports).
  if (size < sizeof(call_lib_map) || !probe->attacher_ || !probe->ctx_ || probe->ctx_->finishing) {
    return 0;
  }
  const auto* e = static_cast<const call_lib_map*>(data);
  ++probe->library_loads_;
  probe->attacher_->ScanNow(*probe->ctx_, static_cast<int>(e->pid),
                            rs::MonotonicNowNs() / 1'000'000);
  return 0;
}

int CallProbe::SampleThunk(void* self, void* data, size_t size) {
  auto* probe = static_cast<CallProbe*>(self);
  if (size < probe->MinEventSize()) {
    ++probe->bad_events_;
    return 0;
  }
  probe->OnEvent(data, size, /*in_flight=*/false);
  return 0;
}

void CallProbe::NoteProcess(int pid) {
  if (ctx_->processes && !ctx_->processes->IsTraced(pid)) {
    (void)ctx_->processes->Trace(pid);  // it may have exited meanwhile: not an error
  }
}

std::optional<int64_t> CallProbe::StackFor(int pid, uint64_t caller) {
  return symbolizer_->StackFor(ctx_->db, pid, caller);
}

int64_t CallProbe::WallNs(uint64_t mono_ns) const {
  const auto* clock = ctx_->clock;
  return clock && !clock->empty() ? clock->Convert(static_cast<int64_t>(mono_ns))
                                  : static_cast<int64_t>(mono_ns);
}

int64_t CallProbe::NextId() {
  return ctx_->ids ? ctx_->ids->Next() : static_cast<int64_t>(events_ + bad_events_ + 1);
}

void CallProbe::NoteWrite(const rs::Result<void>& r) {
  if (r.ok() || (ctx_ != nullptr && ctx_->writes_failed)) {  // the loop counts what failed
    ++events_;
    return;
  }
  ++bad_events_;
  if (first_error_.empty()) {
    first_error_ = r.error().message();
    Log("%.*s: cannot write a row: %s", static_cast<int>(source().size()), source().data(),
        first_error_.c_str());
  }
}

// Calls entered and never returned (the signature of a hang), oldest first: the slots whose
// call is active (exit_ns == 0; entry_ns == 0 is a slot never filled in).
std::vector<std::vector<unsigned char>> CallProbe::InFlightEntries() const {
  std::vector<std::vector<unsigned char>> pending;
  if (!skel_.active) return pending;
  const int fd = bpf_map__fd(skel_.active);
  const size_t key_size = bpf_map__key_size(skel_.active);
  const size_t value_size = bpf_map__value_size(skel_.active);
  std::vector<unsigned char> key(key_size), next(key_size);
  bool first = true;
  while (bpf_map_get_next_key(fd, first ? nullptr : key.data(), next.data()) == 0) {
    std::vector<unsigned char> value(value_size);
    if (bpf_map_lookup_elem(fd, next.data(), value.data()) == 0 && ExitNs(value.data()) == 0 &&
        EntryNs(value.data()) != 0) {
      pending.push_back(std::move(value));
    }
    key = next;
    first = false;
  }
  std::sort(pending.begin(), pending.end(),
            [this](const auto& a, const auto& b) { return EntryNs(a.data()) < EntryNs(b.data()); });
  return pending;
}

// The slots are keyed by thread id (its low 32 bits). A thread that died inside a call (its
// process was killed) leaves its slot behind: written as in flight at the end, but no stall
// now, and it must not hide a later one.
std::optional<int64_t> CallProbe::OldestInFlightNs() const {
  if (finished_ || !skel_.active) return std::nullopt;
  const int fd = bpf_map__fd(skel_.active);
  const size_t key_size = bpf_map__key_size(skel_.active);
  if (key_size < sizeof(uint32_t)) return std::nullopt;
  std::vector<unsigned char> key(key_size), next(key_size);
  std::vector<unsigned char> value(bpf_map__value_size(skel_.active));
  std::optional<int64_t> oldest;
  bool first = true;
  while (bpf_map_get_next_key(fd, first ? nullptr : key.data(), next.data()) == 0) {
    first = false;
    key = next;
    if (bpf_map_lookup_elem(fd, key.data(), value.data()) != 0 || ExitNs(value.data()) != 0) {
      continue;
    }
    const auto entry = static_cast<int64_t>(EntryNs(value.data()));
    if (entry == 0 || (oldest && entry >= *oldest)) continue;
    uint32_t tid = 0;
    std::memcpy(&tid, key.data(), sizeof(tid));
    if (kill(static_cast<pid_t>(tid), 0) != 0 && errno == ESRCH) continue;  // the thread is gone
    oldest = entry;
  }
  return oldest;
}

Probe::CutRows CallProbe::WriteInFlightForCut(RecorderContext& ctx) {
  if (finished_ || !skel_.active || !ctx.ids) return {};
  ctx_ = &ctx;
  Consume();  // calls that returned meanwhile are rows of their own
  const auto pending = InFlightEntries();
  CutRows cut;
  cut.first_id = rs::MakeEventId(ctx.ids->key(), ctx.ids->count() + 1);
  const uint64_t before = events_;
  SaveDecodeState();
  for (const auto& v : pending) OnEvent(v.data(), v.size(), /*in_flight=*/true);
  RestoreDecodeState();  // the calls are decoded again when they return or at Finish
  cut.last_id = rs::MakeEventId(ctx.ids->key(), ctx.ids->count());
  cut.rows = events_ - before;
  return cut;
}

void CallProbe::ForgetCutRows(uint64_t rows) { events_ -= std::min(rows, events_); }

rs::Result<void> CallProbe::Finish(RecorderContext& ctx) {
  if (finished_ || !skel_.active) return rs::Ok();
  ctx_ = &ctx;
  ctx.finishing = true;  // set by the loop already; a probe finished alone (tests) sets it here
  if (attacher_) attacher_->DetachAll();  // no new entries from here on
  if (lib_mmap_link_) bpf_link__destroy(lib_mmap_link_);
  lib_mmap_link_ = nullptr;
  Consume();
  const std::vector<std::vector<unsigned char>> pending = InFlightEntries();
  for (const auto& v : pending) OnEvent(v.data(), v.size(), /*in_flight=*/true);
  final_drops_ = drops();
  RETURN_IF_ERROR(WriteDropReasons(ctx, source(), DropReasons()));
  finished_ = true;
  RETURN_IF_ERROR(WriteMetadata(ctx, pending.size()));
  if (!symbolizer_->write_status().ok()) return symbolizer_->write_status();
  if (!first_error_.empty()) return rs::Error(std::string(source()) + ": " + first_error_);
  return rs::Ok();
}

}  // namespace rs::rec
