// Throughput and size of rankscope-export on a synthetic cluster recording.
//   bench_export [NODES RANKS_PER_NODE STEPS SCHED_PER_STEP [gpu]]
// Prints rows/s and bytes per row / per TracePacket for both output formats. With gpu, the
// input also has a gpu_ops row per NCCL call (testing::AddGpuOps, every rank with the plugin).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "exporter/exporter.h"
#include "exporter/test_input.h"

namespace {

double ThreadCpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  synth::ClusterSpec spec;
  spec.nodes = argc > 1 ? std::atoi(argv[1]) : 8;
  spec.ranks_per_node = argc > 2 ? std::atoi(argv[2]) : 4;
  spec.steps = argc > 3 ? std::atoi(argv[3]) : 200;
  spec.extra_sched_per_step = argc > 4 ? std::atoi(argv[4]) : 40;
  spec.fault = "loss";
  const bool gpu = argc > 5 && std::string(argv[5]) == "gpu";
  char tmpl[] = "/tmp/rs-export-bench-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  if (!dir) return 1;
  const std::string merged = std::string(dir) + "/bench.rsdb";
  auto t0 = std::chrono::steady_clock::now();
  auto in = rs::exporter::testing::WriteInputs(spec, dir, merged);
  if (!in.ok()) {
    std::fprintf(stderr, "%s\n", in.error().message().c_str());
    return 1;
  }
  if (gpu) {
    auto g = rs::exporter::testing::AddGpuOps(merged, {});
    if (!g.ok()) {
      std::fprintf(stderr, "%s\n", g.error().message().c_str());
      return 1;
    }
  }
  auto t1 = std::chrono::steady_clock::now();
  std::printf("input: %d nodes x %d ranks, %d steps, %d sched rows/rank/step%s (built in %.1f s)\n",
              spec.nodes, spec.ranks_per_node, spec.steps, spec.extra_sched_per_step,
              gpu ? ", gpu_ops" : "", Seconds(t0, t1));
  for (auto format : {rs::exporter::Format::kPerfetto, rs::exporter::Format::kChromeJson}) {
    const bool pb = format == rs::exporter::Format::kPerfetto;
    rs::exporter::ExportOptions o;
    o.input = merged;
    o.output = std::string(dir) + (pb ? "/bench.pftrace" : "/bench.json");
    o.force = true;  // the same file, three runs
    o.format = format;
    for (int run = 0; run < 3; ++run) {
      auto a = std::chrono::steady_clock::now();
      const std::clock_t cpu0 = std::clock();
      const double main0 = ThreadCpu();
      auto r = rs::exporter::Export(o);
      const double main_cpu = ThreadCpu() - main0;
      const double cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
      // The reader thread's share is the rest; the slower of the two stages bounds the
      // wall time on an otherwise idle 2-core machine.
      const double stage = std::max(main_cpu, cpu - main_cpu);
      auto b = std::chrono::steady_clock::now();
      if (!r.ok()) {
        std::fprintf(stderr, "%s\n", r.error().message().c_str());
        return 1;
      }
      const double s = Seconds(a, b);
      const double rows = static_cast<double>(r->summary.rows);
      const double events = static_cast<double>(r->stats.events());
      std::printf(
          "%-11s run %d: %lld rows -> %lld trace events (%lld slices x2 (%lld on GPU tracks), "
          "%lld instants, %lld counter samples): %.3f s wall, %.3f s cpu (writer %.3f, reader "
          "%.3f); rows/s: %.2f M "
          "wall, %.2f M by slower stage cpu; trace events/s: %.2f M wall, %.2f M by stage cpu; "
          "%lld bytes = %.1f bytes/row, %.1f bytes/trace event\n",
          pb ? "perfetto" : "chrome-json", run, static_cast<long long>(r->summary.rows),
          static_cast<long long>(r->stats.events()), static_cast<long long>(r->stats.slices),
          static_cast<long long>(r->stats.device_slices), static_cast<long long>(r->stats.instants),
          static_cast<long long>(r->stats.counter_samples), s, cpu, main_cpu, cpu - main_cpu,
          rows / s / 1e6, rows / stage / 1e6, events / s / 1e6, events / stage / 1e6,
          static_cast<long long>(r->bytes), r->bytes / rows, r->bytes / events);
    }
  }
  if (std::getenv("BENCH_KEEP")) {
    std::printf("kept %s\n", dir);
    return 0;
  }
  std::string cmd = std::string("rm -rf '") + dir + "'";
  return std::system(cmd.c_str()) == 0 ? 0 : 1;
}
