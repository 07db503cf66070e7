#include "recorder/probes.h"

#include "recorder/block_probe.h"
#include "recorder/cuda_probe.h"
#include "recorder/gpu_probe.h"
#include "recorder/nccl_probe.h"
#include "recorder/process_probe.h"
#include "recorder/sched_probe.h"
#include "recorder/tcp_probe.h"

namespace rec {

std::vector<std::unique_ptr<Probe>> MakeProbes(const RecorderOptions& opts) {
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
  return probes;
}

}  // namespace rec
