// Merge throughput on synthetic cluster bundles (numbers go to tests/bench/merge.md).
//   bench_merge [--nodes N] [--steps S] [--extra-sched K] [--repeat R] [--keep DIR]
//               [--collectives sync|async]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>
#include <string>

#include "merger/merge.h"
#include "merger/test_bundles.h"
#include "tests/support/synth_bundle.h"

int main(int argc, char** argv) {
  rs::merge::ConfigureSqlite();  // as rankscope-merge does
  synth::ClusterSpec spec;
  spec.nodes = 4;
  spec.ranks_per_node = 2;
  spec.steps = 100;
  spec.extra_sched_per_step = 600;
  int repeat = 3;
  std::string keep;  // write bundles and output here and leave them (for profiling)
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--nodes"))
      spec.nodes = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps"))
      spec.steps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--extra-sched"))
      spec.extra_sched_per_step = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeat"))
      repeat = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--keep"))
      keep = argv[i + 1];
    else if (!std::strcmp(argv[i], "--collectives"))
      spec.collectives = argv[i + 1];  // async: GPU nodes (cuda_events, gpu_ops)
    else {
      std::fprintf(stderr, "bench_merge: unknown option %s\n", argv[i]);
      return 1;
    }
  }
  spec.offset_ns.assign(spec.nodes, 0);
  for (int k = 0; k < spec.nodes; ++k) spec.offset_ns[k] = (k % 2 ? 1 : -1) * k * 3'000'000;
  rs::merge::testing::TempDir tmp;
  const std::string dir = keep.empty() ? tmp.path() : keep;
  auto t0 = std::chrono::steady_clock::now();
  auto paths = synth::WriteClusterBundles(spec, dir);
  if (!paths.ok()) {
    std::fprintf(stderr, "bench_merge: %s\n", paths.error().message().c_str());
    return 1;
  }
  double gen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  synth::RowCounts rows = synth::ExpectedRows(spec);
  int64_t events =
      rows.nccl + rows.tcp + rows.sched + rows.block + rows.process + rows.cuda + rows.gpu;
  int64_t bundle_bytes = 0;
  for (const std::string& p : paths.value()) bundle_bytes += rs::merge::testing::FileSize(p);
  std::printf(
      "inputs: %d nodes x %d ranks, %d steps (%s), %lld events, %.1f MiB of bundles "
      "(generated in %.1f s)\n",
      spec.nodes, spec.ranks_per_node, spec.steps, spec.collectives.c_str(),
      static_cast<long long>(events), bundle_bytes / 1048576.0, gen_s);
  // One merge; its wall time in seconds, or a negative number on failure.
  auto run = [&](int r) -> double {
    rs::merge::MergeOptions opt;
    opt.inputs = paths.value();
    opt.out_path = dir + "/merged.rsdb";
    std::ostringstream log;
    // Each run writes a new file, as a first merge does: renaming over the previous run's
    // output would make ext4 allocate and start writing the new file's blocks at the rename.
    std::remove(opt.out_path.c_str());
    auto start = std::chrono::steady_clock::now();
    std::clock_t cpu0 = std::clock();
    auto result = rs::merge::Merge(opt, log);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
    if (!result.ok()) {
      std::fprintf(stderr, "bench_merge: %s\n", result.error().message().c_str());
      return -1;
    }
    if (result->event_rows != events) {
      std::fprintf(stderr, "bench_merge: wrote %lld event rows, expected %lld\n",
                   static_cast<long long>(result->event_rows), static_cast<long long>(events));
      return -1;
    }
    double load = 0;
    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
      if (std::fscanf(f, "%lf", &load) != 1) load = 0;
      std::fclose(f);
    }
    std::printf(
        "run %d: %.2f s wall, %.2f M events/s; %.2f s CPU (all threads), %.2f M events per "
        "CPU-s; output %.1f MiB; load average %.1f\n",
        r + 1, s, events / s / 1e6, cpu, events / cpu / 1e6,
        rs::merge::testing::FileSize(opt.out_path) / 1048576.0, load);
    for (const rs::merge::PhaseTime& p : result->phases) {
      std::printf("  %-28s %.3f s wall, %.3f s CPU\n", p.phase.c_str(), p.wall_s, p.cpu_s);
    }
    return s;
  };
  for (int r = 0; r < repeat; ++r) {
    if (run(r) < 0) return 1;
  }
  return 0;
}
