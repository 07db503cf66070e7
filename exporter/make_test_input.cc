// Writes synthetic test inputs for rankscope-export's end-to-end test:
//   rankscope_export_testdata DIR [FAULT]
// -> DIR/node<k>.rsb (with clock offsets) and DIR/merged.rsdb (aligned).
#include <cstdio>
#include <string>

#include "test_input.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s DIR [none|loss|cpu|io|slow|hang]\n", argv[0]);
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
  return 0;
}
