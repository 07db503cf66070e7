// `rankscope-analyze summarize BUNDLE... [-o FILE] [--force]`: each node bundle reduced to its
// summary (summarize.h), written beside it as NAME.rss unless -o names the one output.
#include "analyzer/summarize_command.h"

#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "rscore/cli.h"
#include "rscore/cli_help.h"
#include "rscore/clock.h"
#include "rscore/output.h"
#include "rscore/summarize.h"
#include "rscore/text_escape.h"

namespace po = boost::program_options;

namespace {

constexpr const char* kName = "rankscope-analyze summarize";

const rs::cli::HelpText kHelp = {
    .usage = "rankscope-analyze summarize BUNDLE... [-o FILE] [--force]",
    .about =
        "Reduces each node bundle (.rsb) to a summary (.rss): the same kind of file, with\n"
        "every row the report's verdict reads (NCCL calls, GPU operations, clocks, processes,\n"
        "retransmits, block I/O, RDMA counters, Flight Recorder records) and, of the bulky\n"
        "tables, only what an analysis reads: the run-queue waits of the job's processes (no\n"
        "off-CPU intervals), the CUDA calls that may wait for the device (synchronizes,\n"
        "blocking copies), those in flight and each thread's latest (no kernel launches or\n"
        "asynchronous copies). rankscope-merge merges summaries as it merges\n"
        "bundles, beside raw bundles of other nodes (a node's raw bundle wins over its\n"
        "summary). Run it where the bundles are, one process per bundle, and copy only the\n"
        "summaries; the report names the nodes to fetch raw. Without -o each summary is\n"
        "written beside its bundle, its name ending in .rss instead of .rsb.",
    .examples = {{"rankscope-analyze summarize node3.rsb", "writes node3.rss beside it"},
                 {"ls /shared/job42/*.rsb | xargs -P 8 -n 1 rankscope-analyze summarize -q",
                  "every bundle of a job, 8 at a time"},
                 {"rankscope-merge -o job.rsdb /shared/job42/*.rss",
                  "then merge the summaries, and report on them"}},
    .man_page = "rankscope-analyze(1)",
    .more_exit_codes = ", 3 some bundles failed (each named), the others written"};

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Where a bundle's summary goes without -o: beside it, .rsb replaced by (or extended with) .rss.
std::string DefaultOutput(const std::string& bundle) {
  return (EndsWith(bundle, ".rsb") ? bundle.substr(0, bundle.size() - 4) : bundle) + ".rss";
}

std::string Percent(int64_t part, int64_t whole) {
  if (whole <= 0) return "?";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %%", 100.0 * static_cast<double>(part) / whole);
  return buf;
}

}  // namespace

int RunSummarizeCommand(int argc, char** argv) {
  using namespace rs::cli;
  po::options_description opts;
  std::string output;
  bool force = false, quiet = false, skip_integrity = false;
  opts.add_options()("help,h", "show this help")(
      "out,o", po::value<std::string>(&output)->value_name("FILE"),
      "write the summary to FILE (one BUNDLE only; default: BUNDLE's name ending in .rss)")(
      "force", po::bool_switch(&force), "replace an existing summary")(
      "no-integrity-check", po::bool_switch(&skip_integrity),
      "skip SQLite's quick_check of the bundle (faster on very large bundles)")(
      "quiet,q", po::bool_switch(&quiet), "no final lines; errors are still printed");
  auto parsed = ParseArgs(ArgsOf(argc, argv), opts, {});
  if (!parsed.ok()) {
    std::cerr << kName << ": " << rs::EscapeText(WithHelpHint(parsed.error().message(), kName))
              << "\n";
    return kExitUsage;
  }
  if (parsed->vm.count("help")) {
    std::cout << FormatHelp(kHelp, opts);
    return kExitOk;
  }
  const std::vector<std::string>& bundles = parsed->positional;
  std::string usage;
  if (bundles.empty()) usage = "expected one or more node bundles (.rsb)";
  if (!output.empty() && bundles.size() > 1) {
    usage = "-o names one output, but " + std::to_string(bundles.size()) +
            " bundles were given; leave -o out to write each summary beside its bundle";
  }
  if (!usage.empty()) {
    std::cerr << kName << ": " << rs::EscapeText(WithHelpHint(usage, kName)) << "\n";
    return kExitUsage;
  }
  int failed = 0;
  for (const std::string& bundle : bundles) {
    const int64_t started = rs::MonotonicNowNs();
    const std::string out = output.empty() ? DefaultOutput(bundle) : output;
    auto target = rs::CheckOutput(out, force, {bundle});
    if (!target.ok()) {
      std::cerr << kName << ": " << rs::EscapeText(WithHelpHint(target.error().message(), kName))
                << "\n";
      if (bundles.size() == 1) return kExitUsage;
      ++failed;
      continue;
    }
    auto stats = rs::Summarize(bundle, *target, !skip_integrity);
    if (!stats.ok()) {
      std::cerr << kName << ": " << rs::EscapeText(stats.error().message()) << "\n";
      ++failed;
      continue;
    }
    if (!quiet) {
      std::cerr << kName << ": "
                << WroteLine(rs::EscapeText(target->shown()),
                             "node " + rs::EscapeText(stats->node) + ", " +
                                 std::to_string(stats->summary_bytes) + " bytes, " +
                                 Percent(stats->summary_bytes, stats->bundle_bytes) +
                                 " of the bundle's " + std::to_string(stats->bundle_bytes),
                             rs::MonotonicNowNs() - started)
                << "\n";
    }
  }
  if (failed == 0) return kExitOk;
  return failed == static_cast<int>(bundles.size()) ? kExitError : kExitPartial;
}
