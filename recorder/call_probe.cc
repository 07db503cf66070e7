#include "recorder/call_probe.h"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "abi/call.h"
#include "recorder/kernel_probe.h"
#include "recorder/options.h"
#include "recorder/process_table.h"
#include "recorder/ring_poller.h"
#include "recorder/uprobe_multi.h"

namespace rec {
namespace {

int64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

CallProbe::~CallProbe() { Shutdown(); }

void CallProbe::Shutdown() {
  attacher_.reset();  // links before the programs they point to
}

uint64_t CallProbe::drops() const {
  if (finished_ || !skel_.stats) return final_drops_;
  int fd = bpf_map__fd(skel_.stats);
  return SumPerCpuU64(fd, CALL_STAT_RB_FULL) + SumPerCpuU64(fd, CALL_STAT_LOST_ENTRY) +
         SumPerCpuU64(fd, CALL_STAT_STALE_ENTRY) + bad_events_ + decode_drops();
}

rs::Result<void> CallProbe::Start(RecorderContext& ctx) {
  ctx_ = &ctx;
  symbolizer_ = std::make_unique<CallerSymbolizer>(ctx.proc_root);
  filter_pids_ = ctx.options && !ctx.options->pids.empty();
  // uprobe_multi links where the kernel has them (Linux 6.6+; detaching is fast), else one
  // perf-event uprobe per function: decided by trying.
  bool multi = false;
  if (uprobe_multi_allowed_) {
    if (auto loaded = Load(ctx, filter_pids_, /*uprobe_multi=*/true); loaded.ok()) {
      skel_ = loaded.value();
      multi = UprobeMultiWorks(skel_.entry);
      if (!multi) Unload();
    } else {
      Unload();
    }
  }
  if (!multi) {
    ASSIGN_OR_RETURN(skel_, Load(ctx, filter_pids_, /*uprobe_multi=*/false));
  }
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
  return rs::Ok();
}

void CallProbe::Consume() {
  if (ctx_ && ctx_->poller) ctx_->poller->Consume();
}

void CallProbe::Tick(RecorderContext& ctx) {
  if (!attacher_) return;
  attacher_->Tick(ctx, MonotonicMs());
  Consume();  // the BPF side wakes the poller only when much is pending
}

void CallProbe::OnProcessExec(RecorderContext& /*ctx*/, int pid) {
  if (!attacher_) return;
  attacher_->Watch(pid, MonotonicMs());
  Consume();  // rows of the old image first; then forget its state and mappings
  ForgetProcess(pid);
  symbolizer_->Forget(pid);
}

void CallProbe::OnProcessTraced(RecorderContext& /*ctx*/, int pid) {
  if (!filter_pids_ || !skel_.pids) return;
  uint32_t key = static_cast<uint32_t>(pid);
  uint8_t one = 1;
  bpf_map__update_elem(skel_.pids, &key, sizeof(key), &one, sizeof(one), BPF_ANY);
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
  if (r.ok()) {
    ++events_;
    return;
  }
  ++bad_events_;
  if (first_error_.empty()) {
    first_error_ = r.error().message();
    std::fprintf(stderr, "rankscope-record: %.*s: cannot write a row: %s\n",
                 static_cast<int>(source().size()), source().data(), first_error_.c_str());
  }
}

rs::Result<void> CallProbe::Finish(RecorderContext& ctx) {
  if (finished_ || !skel_.active) return rs::Ok();
  ctx_ = &ctx;
  if (attacher_) attacher_->DetachAll();  // no new entries from here on
  Consume();
  // Calls entered and never returned (the signature of a hang), oldest first: the slots
  // whose call is active (exit_ns == 0; entry_ns == 0 is a slot never filled in).
  const int fd = bpf_map__fd(skel_.active);
  const size_t key_size = bpf_map__key_size(skel_.active);
  const size_t value_size = bpf_map__value_size(skel_.active);
  std::vector<std::vector<unsigned char>> pending;
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
  for (const auto& v : pending) OnEvent(v.data(), v.size(), /*in_flight=*/true);
  final_drops_ = drops();
  finished_ = true;
  RETURN_IF_ERROR(WriteMetadata(ctx, pending.size()));
  if (!symbolizer_->write_status().ok()) return symbolizer_->write_status();
  if (!first_error_.empty()) return rs::Error(std::string(source()) + ": " + first_error_);
  return rs::Ok();
}

}  // namespace rec
