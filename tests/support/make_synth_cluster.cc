// make-synth-cluster: writes synthetic node bundles (see synth_bundle.h) for end-to-end tests
// and benchmarks of the workstation tools.
//   make-synth-cluster DIR [--nodes N] [--ranks R] [--steps S] [--fault KIND] [--fault-node K]
//                      [--offset K=NS,...] [--drift K=PPM,...] [--transfer-ms MS]
//                      [--extra-sched N] [--launches N] [--seed S] [--collectives sync|async]
//                      [--buckets N] [--gpu-ops 0|1] [--cuda-calls 0|1] [--gpu-clock-error NS]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "synth_bundle.h"

namespace {

// Parses "K=V,K=V" into a per-node vector.
template <typename T>
bool ParseMap(const char* text, int nodes, std::vector<T>& out) {
  out.assign(nodes, T{});
  std::string s = text;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? s.size() : comma + 1;
    size_t eq = item.find('=');
    if (eq == std::string::npos) return false;
    int k = std::atoi(item.c_str() + (item.rfind("node", 0) == 0 ? 4 : 0));
    if (k < 0 || k >= nodes) return false;
    out[k] = static_cast<T>(std::strtod(item.c_str() + eq + 1, nullptr));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr,
                 "usage: make-synth-cluster DIR [--nodes N] [--ranks R] [--steps S] "
                 "[--fault KIND] [--fault-node K] [--offset K=NS,..] [--drift K=PPM,..] "
                 "[--transfer-ms MS] [--extra-sched N] [--launches N] [--seed S] [--collectives sync|async] "
                 "[--buckets N] [--gpu-ops 0|1] [--cuda-calls 0|1] [--gpu-clock-error NS]\n");
    return 2;
  }
  synth::ClusterSpec spec;
  const char* offsets = nullptr;
  const char* drifts = nullptr;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string f = argv[i];
    const char* v = argv[i + 1];
    if (f == "--nodes")
      spec.nodes = std::atoi(v);
    else if (f == "--ranks")
      spec.ranks_per_node = std::atoi(v);
    else if (f == "--steps")
      spec.steps = std::atoi(v);
    else if (f == "--fault")
      spec.fault = v;
    else if (f == "--fault-node")
      spec.fault_node = std::atoi(v);
    else if (f == "--offset")
      offsets = v;
    else if (f == "--drift")
      drifts = v;
    else if (f == "--transfer-ms")
      spec.transfer_ns = static_cast<int64_t>(std::atof(v) * 1e6);
    else if (f == "--extra-sched")
      spec.extra_sched_per_step = std::atoi(v);
    else if (f == "--launches")
      spec.launches_per_step = std::atoi(v);
    else if (f == "--seed")
      spec.seed = std::strtoull(v, nullptr, 10);
    else if (f == "--collectives")
      spec.collectives = v;
    else if (f == "--buckets")
      spec.buckets = std::atoi(v);
    else if (f == "--gpu-ops")
      spec.gpu_ops = std::atoi(v) != 0;
    else if (f == "--cuda-calls")
      spec.cuda_calls = std::atoi(v) != 0;
    else if (f == "--gpu-clock-error")
      spec.gpu_clock_error_ns = std::strtoll(v, nullptr, 10);
    else {
      std::fprintf(stderr, "make-synth-cluster: unknown option %s\n", f.c_str());
      return 2;
    }
  }
  if ((offsets && !ParseMap(offsets, spec.nodes, spec.offset_ns)) ||
      (drifts && !ParseMap(drifts, spec.nodes, spec.drift_ppm))) {
    std::fprintf(stderr, "make-synth-cluster: bad --offset/--drift (use K=VALUE,...)\n");
    return 2;
  }
  auto paths = synth::WriteClusterBundles(spec, argv[1]);
  if (!paths.ok()) {
    std::fprintf(stderr, "make-synth-cluster: %s\n", paths.error().message().c_str());
    return 1;
  }
  for (const auto& p : *paths) std::printf("%s\n", p.c_str());
  return 0;
}
