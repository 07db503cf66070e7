#include "recorder/kernel_probe.h"

#include <bpf/bpf.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "bpf/abi/common.h"
#include "recorder/attach_log.h"
#include "recorder/log.h"
#include "recorder/ring_poller.h"

namespace rs::rec {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "tp_btf/sched_switch" -> "sched_switch"; "tracepoint/sched/sched_switch" -> "sched/sched_switch".
std::string TracepointName(const bpf_program* prog) {
  std::string sec = bpf_program__section_name(prog);
  size_t slash = sec.find('/');
  return slash == std::string::npos ? sec : sec.substr(slash + 1);
}

bool g_force_classic = false;

}  // namespace

void ForceClassicTracepointsForTesting(bool on) { g_force_classic = on; }
bool ClassicTracepointsForced() { return g_force_classic; }

std::string_view VariantName(TracepointVariant v) {
  return v == TracepointVariant::kTpBtf ? "tp_btf" : "tracepoint";
}

void SelectVariant(bpf_object* obj, TracepointVariant v) {
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    std::string_view name = bpf_program__name(prog);
    bool is_btf = EndsWith(name, "_btf");
    bool is_tp = EndsWith(name, "_tp");
    if (!is_btf && !is_tp) continue;  // not a variant pair: left as compiled
    bool want = v == TracepointVariant::kTpBtf ? is_btf : is_tp;
    bpf_program__set_autoload(prog, want);
  }
}

rs::Result<void> CheckAbiVersion(uint32_t object_version, std::string_view source) {
  if (object_version != RS_BPF_ABI_VERSION) {
    return rs::Error(std::string(source) + ": BPF object has ABI version " +
                     std::to_string(object_version) + ", this recorder expects " +
                     std::to_string(RS_BPF_ABI_VERSION) + "; rebuild rankscope-record");
  }
  return rs::Ok();
}

uint64_t SumPerCpuU64(int map_fd, uint32_t key) {
  if (map_fd < 0) return 0;
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return 0;
  std::vector<uint64_t> values(static_cast<size_t>(ncpu));
  if (bpf_map_lookup_elem(map_fd, &key, values.data()) != 0) return 0;
  uint64_t sum = 0;
  for (uint64_t v : values) sum += v;
  return sum;
}

uint64_t KernelSkippedRuns(bpf_object* obj) {
  uint64_t n = 0;
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    const int fd = bpf_program__fd(prog);
    if (fd < 0) continue;  // not loaded (the other variant, a program left out)
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) n += info.recursion_misses;
  }
  return n;
}

rs::Result<void> WriteDropReasons(RecorderContext& ctx, std::string_view source,
                                  std::span<const DropReason> reasons) {
  if (!ctx.db) return rs::Ok();
  ASSIGN_OR_RETURN(rs::Statement st,
                   ctx.db->Prepare("INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)"));
  for (const auto& [reason, n] : reasons) {
    RETURN_IF_ERROR(
        st.Bind(1, std::string(source) + "_drops_" + reason).Bind(2, std::to_string(n)).Run());
  }
  return rs::Ok();
}

KernelProbe::~KernelProbe() {
  for (bpf_link* l : links_) bpf_link__destroy(l);
  links_.clear();
  if (destroy_) destroy_();
}

std::array<DropReason, 4> KernelProbe::DropReasons() const {
  return {{{"ring_full", SumPerCpuU64(stats_fd_, RS_STAT_DROPS)},
           {"lost_state", SumPerCpuU64(stats_fd_, RS_STAT_LOST)},
           {"undecodable", decode_errors_},
           {"kernel_skipped", obj_ ? KernelSkippedRuns(obj_) : 0}}};
}

uint64_t KernelProbe::drops() const {
  if (finished_) return final_drops_;
  uint64_t n = 0;
  for (const DropReason& r : DropReasons()) n += r.count;
  return n;
}

rs::Result<void> KernelProbe::AttachAll(RecorderContext& ctx) {
  bpf_program* prog;
  int attached = 0;
  std::string first_error;
  bpf_object__for_each_program(prog, obj_) {
    if (!bpf_program__autoload(prog)) continue;
    std::string target = TracepointName(prog);
    bpf_link* link = bpf_program__attach(prog);
    int err = link ? 0 : -errno;
    if (link) {
      links_.push_back(link);
      ++attached;
    } else if (first_error.empty()) {
      first_error = target + ": " + std::strerror(-err);
    }
    if (ctx.attach_log) {
      ctx.attach_log->Record("tracepoint", target, "", link != nullptr,
                             link ? "" : std::strerror(-err));
    }
  }
  if (attached == 0) {
    return rs::Error(std::string(source()) + ": no tracepoint could be attached (" + first_error +
                     ")");
  }
  return rs::Ok();
}

void KernelProbe::DisablePrograms(bpf_object* obj, const std::vector<std::string>& base_names) {
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    std::string_view name = bpf_program__name(prog);
    for (const auto& base : base_names) {
      if (name == base + "_btf" || name == base + "_tp") bpf_program__set_autoload(prog, false);
    }
  }
}

void KernelProbe::LogOptionalMissing(RecorderContext& ctx,
                                     const std::vector<std::string>& base_names,
                                     const std::string& error) {
  if (ctx.attach_log == nullptr) return;
  for (const auto& base : base_names) {
    ctx.attach_log->Record("tracepoint", base, "", false,
                           "optional program left out: the kernel rejected it (" + error + ")");
  }
}

int KernelProbe::SampleThunk(void* self, void* data, size_t size) {
  auto* probe = static_cast<KernelProbe*>(self);
  auto r = probe->OnSample(std::span<const uint8_t>(static_cast<const uint8_t*>(data), size));
  if (!r.ok() && probe->ctx_ != nullptr && probe->ctx_->writes_failed) {
    ++probe->events_;  // the event loop counts it as not written
  } else if (!r.ok()) {
    ++probe->decode_errors_;
    if (probe->first_decode_error_.empty()) {
      probe->first_decode_error_ = r.error().message();
      Log("%s: cannot store an event: %s", std::string(probe->source()).c_str(),
          r.error().message().c_str());
    }
  } else {
    ++probe->events_;
  }
  return 0;  // never stop the poller for one bad record
}

rs::Result<void> KernelProbe::AddRingBuffer(RecorderContext& ctx, bpf_map* map) {
  auto r = ctx.poller->Add(bpf_map__fd(map), &KernelProbe::SampleThunk, this);
  if (!r.ok()) return r.error().Wrap(std::string(source()));
  return rs::Ok();
}

rs::Result<void> KernelProbe::AttachAndPoll(RecorderContext& ctx, bpf_map* ring) {
  RETURN_IF_ERROR(AttachAll(ctx));
  return AddRingBuffer(ctx, ring);
}

rs::Result<void> KernelProbe::FinishKernel(RecorderContext& ctx) {
  for (bpf_link* l : links_) bpf_link__destroy(l);
  links_.clear();
  ctx.poller->Consume();
  const std::array<DropReason, 4> reasons = DropReasons();
  final_drops_ = drops();
  finished_ = true;
  return WriteDropReasons(ctx, source(), reasons);
}

}  // namespace rs::rec
