#include "recorder/probes.h"

#include "recorder/block_probe.h"
#include "recorder/process_probe.h"
#include "recorder/sched_probe.h"
#include "recorder/tcp_probe.h"

// --- NCCL / CUDA probe headers (nccl_probe.h, cuda_probe.h) ---
#include "recorder/cuda_probe.h"
#include "recorder/nccl_probe.h"
// --- end NCCL / CUDA probe headers ---

namespace rec {

std::vector<std::unique_ptr<Probe>> MakeProbes(const RecorderOptions& opts) {
  std::vector<std::unique_ptr<Probe>> probes;
  // The process probe first: exec events of the others' targets arrive early.
  probes.push_back(std::make_unique<ProcessProbe>());
  probes.push_back(std::make_unique<TcpProbe>());
  probes.push_back(std::make_unique<SchedProbe>());
  probes.push_back(std::make_unique<BlockProbe>());
  // --- NCCL / CUDA probes (nccl_probe.h, cuda_probe.h) ---
  probes.push_back(MakeNcclProbe(opts));
  probes.push_back(MakeCudaProbe(opts));
  // --- end NCCL / CUDA probes ---
  (void)opts;
  return probes;
}

}  // namespace rec
