#include "recorder/probes.h"

#include "recorder/block_probe.h"
#include "recorder/cuda_probe.h"
#include "recorder/gpu_probe.h"
#include "recorder/nccl_probe.h"
#include "recorder/options.h"
#include "recorder/process_probe.h"
#include "recorder/rdma_probe.h"
#include "recorder/sched_probe.h"
#include "recorder/tcp_probe.h"

namespace rs::rec {

namespace {

// A source --sources left out: nothing loaded or attached; 'off' in the sources table.
class LeftOutProbe : public Probe {
 public:
  explicit LeftOutProbe(std::string_view source) : source_(source) {}
  std::string_view source() const override { return source_; }
  rs::Result<void> Start(RecorderContext&) override { return rs::Error("left out by --sources"); }
  rs::Result<void> Finish(RecorderContext&) override { return rs::Ok(); }
  std::string method() const override { return "off"; }
  bool left_out() const override { return true; }
  uint64_t events() const override { return 0; }
  uint64_t drops() const override { return 0; }

 private:
  std::string source_;
};

}  // namespace

std::vector<std::unique_ptr<Probe>> MakeProbes(const RecorderOptions& opts) {
  std::vector<std::unique_ptr<Probe>> probes = MakeAllProbes(opts);
  // The call probes follow processes through the process probe's exec events (a process that
  // exec'd maps other libraries): it stays while any of them is selected.
  const bool follows_execs =
      SourceSelected(opts, "nccl") || SourceSelected(opts, "cuda") || SourceSelected(opts, "gpu");
  for (auto& p : probes) {
    if (SourceSelected(opts, p->source())) continue;
    if (p->source() == "process" && follows_execs) continue;
    p = std::make_unique<LeftOutProbe>(p->source());
  }
  return probes;
}

std::vector<std::unique_ptr<Probe>> MakeAllProbes(const RecorderOptions& opts) {
  std::vector<std::unique_ptr<Probe>> probes;
  // The process probe first: exec events of the others' targets arrive early.
  probes.push_back(std::make_unique<ProcessProbe>());
  probes.push_back(std::make_unique<TcpProbe>());
  probes.push_back(std::make_unique<SchedProbe>());
  probes.push_back(std::make_unique<BlockProbe>());
  // User-space calls: NCCL and CUDA (uprobes on every discovered library copy).
  probes.push_back(MakeNcclProbe(opts));
  probes.push_back(MakeCudaProbe(opts));
  // After them: its region discovery reuses their rescans' readings of /proc (same tick), and
  // at Finish it looks up the NCCL rows they wrote.
  probes.push_back(MakeGpuProbe(opts));
  // RDMA ports' counters from sysfs: no BPF, a reading a second.
  probes.push_back(std::make_unique<RdmaProbe>());
  return probes;
}

}  // namespace rs::rec
