// bench_report: time and peak memory of `report` on a large synthetic merged database.
//   bench_report [--events N] [--dir DIR] [--fault KIND] [--runs R] [--input FILE]
// Builds an 8-node x 4-rank cluster padded with scheduler rows (extra_sched_per_step) to about
// N events (default 10M), then runs the report R times (default 3) in a fresh process each
// (this program re-executed with --child), printing wall time and peak RSS of each run.
// --input FILE skips the generation and measures the report on FILE.
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/report.h"
#include "analyzer/report_render.h"
#include "analyzer/report_test_util.h"
#include "rscore/bundle.h"

namespace {

int Child(const std::string& path, const std::string& format, bool check) {
  auto t0 = std::chrono::steady_clock::now();
  auto opened = rs::OpenRankscopeFile(path, check);
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.error().message().c_str());
    return 1;
  }
  auto t1 = std::chrono::steady_clock::now();
  auto report = rs::analyzer::BuildReport(*opened);
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.error().message().c_str());
    return 1;
  }
  auto fmt = rs::analyzer::ParseReportFormat(format);
  std::string out =
      rs::analyzer::Render(*report, fmt.ok() ? *fmt : rs::analyzer::ReportFormat::kJson);
  auto t2 = std::chrono::steady_clock::now();
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf("  open %.0f ms, analyze+render %.0f ms, output %zu bytes; verdict: %.100s\n",
              ms(t0, t1), ms(t1, t2), out.size(), report->verdict.c_str());
  return 0;
}

// Writes the padded cluster as DIR/cluster.rsdb (kept for later --input runs).
rs::Result<std::string> Generate(int64_t events, const std::string& dir, const std::string& fault) {
  if (dir.empty()) return rs::Error("--dir is needed to generate (the database is kept there)");
  synth::ClusterSpec spec;
  spec.nodes = 8;
  spec.ranks_per_node = 4;
  spec.steps = 400;
  spec.fault = fault;
  spec.fault_node = 5;
  spec.extra_sched_per_step =
      static_cast<int>(events / (spec.nodes * spec.ranks_per_node * spec.steps));
  synth::RowCounts rows = synth::ExpectedRows(spec);
  int64_t total = rows.nccl + rows.tcp + rows.sched + rows.block + rows.process + rows.cuda;
  std::printf(
      "cluster: %d nodes x %d ranks, %d steps, fault %s on node%d; %lld events "
      "(%lld sched, %lld nccl)\n",
      spec.nodes, spec.ranks_per_node, spec.steps, fault.c_str(), spec.fault_node,
      static_cast<long long>(total), static_cast<long long>(rows.sched),
      static_cast<long long>(rows.nccl));
  auto g0 = std::chrono::steady_clock::now();
  auto path = rs::analyzer::testing::WriteMergedCluster(spec, dir, 50'000);
  if (!path.ok()) return path;
  std::printf("generated %s in %.1f s\n", path->c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count());
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 5 && std::strcmp(argv[1], "--child") == 0) {
    return Child(argv[2], argv[3], std::strcmp(argv[4], "check") == 0);
  }
  int64_t events = 10'000'000;
  std::string dir, fault = "cpu", input;
  int runs = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--events")
      events = std::atoll(argv[i + 1]);
    else if (k == "--dir")
      dir = argv[i + 1];
    else if (k == "--fault")
      fault = argv[i + 1];
    else if (k == "--runs")
      runs = std::atoi(argv[i + 1]);
    else if (k == "--input")
      input = argv[i + 1];
    else {
      std::fprintf(stderr,
                   "usage: bench_report [--events N] [--dir DIR] [--fault KIND]"
                   " [--runs R] [--input FILE]\n");
      return 2;
    }
  }
  rs::Result<std::string> path = input;
  if (input.empty()) path = Generate(events, dir, fault);
  if (!path.ok()) {
    std::fprintf(stderr, "%s\n", path.error().message().c_str());
    return 1;
  }
  for (const char* check : {"nocheck", "check"}) {
    for (int r = 0; r < runs; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      pid_t pid = fork();
      if (pid == 0) {
        execl("/proc/self/exe", argv[0], "--child", path->c_str(), "json", check,
              static_cast<char*>(nullptr));
        _exit(127);
      }
      int status = 0;
      struct rusage ru {};
      wait4(pid, &status, 0, &ru);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
                   ru.ru_stime.tv_usec / 1e6;
      double load[1] = {0};
      getloadavg(load, 1);
      std::printf(
          "run %d (%s integrity check): %.2f s wall, %.2f s CPU, peak RSS %.0f MiB, exit %d"
          " (load average %.1f)\n",
          r + 1, std::strcmp(check, "check") == 0 ? "with" : "without", s, cpu,
          ru.ru_maxrss / 1024.0, WIFEXITED(status) ? WEXITSTATUS(status) : -1, load[0]);
    }
  }
  return 0;
}
