// Writes synthetic test inputs for rankscope-export's end-to-end test:
//   rankscope_export_testdata DIR [FAULT [gpu]]
// -> DIR/node<k>.rsb (with clock offsets) and DIR/merged.rsdb (aligned). With gpu, the merged
// db also gets gpu_ops rows (AddGpuOps: rank 5 without the plugin, rank 0's calls in flight
// never started, rank 2's host calls of every 5th seq removed).
#include <cstdio>
#include <string>

#include "exporter/test_input.h"

int main(int argc, char** argv) {
  const bool gpu = argc == 4 && std::string(argv[3]) == "gpu";
  if (argc < 2 || argc > 4 || (argc == 4 && !gpu)) {
    std::fprintf(stderr, "usage: %s DIR [none|loss|cpu|io|slow|hang [gpu]]\n", argv[0]);
    return 2;
  }
  synth::ClusterSpec spec;
  spec.nodes = 3;
  spec.ranks_per_node = 2;
  spec.steps = 30;
  spec.fault = argc == 3 ? argv[2] : "hang";
  spec.hang_step = 20;
  spec.offset_ns = {0, 3'000'000, -2'000'000};
  const std::string dir = argv[1];
  auto r = rs::exporter::testing::WriteInputs(spec, dir, dir + "/merged.rsdb");
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.error().message().c_str());
    return 1;
  }
  if (gpu) {
    auto g = rs::exporter::testing::AddGpuOps(dir + "/merged.rsdb", {5, 0, 2});
    if (!g.ok()) {
      std::fprintf(stderr, "%s\n", g.error().message().c_str());
      return 1;
    }
  }
  return 0;
}
