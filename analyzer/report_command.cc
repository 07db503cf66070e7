// `rankscope-analyze report INPUT [--format text|json|markdown|html] [-o FILE]`.
#include "analyzer/report_command.h"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "analyzer/report.h"
#include "analyzer/report_filter.h"
#include "analyzer/report_render.h"
#include "rscore/bundle.h"
#include "rscore/cli.h"
#include "rscore/cli_help.h"
#include "rscore/clock.h"
#include "rscore/output.h"
#include "rscore/text_escape.h"
#include "rscore/time_arg.h"

namespace po = boost::program_options;

namespace {

struct ReportArgs {
  rs::analyzer::ReportFilter filter;
  std::string input;
  std::string format = "text";
  std::string output;
  std::string fail_on;  // '', 'straggler', 'hang', 'any'
  bool help = false;
  bool skip_integrity = false;
  bool all_nodes = false;
  bool force = false;
  bool quiet = false;
};

const rs::cli::HelpText kHelp = {
    .usage =
        "rankscope-analyze report INPUT [--format text|json|markdown|html] [-o FILE]\n"
        "       [--force] [--fail-on straggler|hang|any] [--from T] [--to T] [--nodes NODES]\n"
        "       [--ranks RANKS] [--comm HASH]",
    .about =
        "INPUT is a merged database (.rsdb, clock-aligned) or one node's bundle (.rsb,\n"
        "clock as recorded). The report names the straggler rank/node and ranks its\n"
        "causes (network, cpu_contention, io, compute, hang, unknown), analyses hangs\n"
        "and gives each conclusion's confidence, evidence and clock error bound.",
    .examples = {{"rankscope-analyze report job.rsdb", "the report as text on standard output"},
                 {"rankscope-analyze report job.rsdb --format html -o report.html",
                  "the report with plots, for a browser"},
                 {"rankscope-analyze report job.rsdb --format json --fail-on any | jq .stragglers",
                  "for a script: exit status 4 when a straggler or a hang was found"},
                 {"rankscope-analyze report job.rsdb --from +40s --to +70s --nodes node3,node7",
                  "thirty seconds of two nodes (+offsets count from the recording's start)"}},
    .man_page = "rankscope-analyze(1)",
    .more_exit_codes = ", 4 --fail-on found what was asked for"};

// Boost reports bad options by throwing; turned into a Result here.
rs::Result<ReportArgs> ParseArgs(int argc, char** argv, po::options_description& opts) {
  ReportArgs a;
  std::string output_alias, from, to, comm;
  std::vector<std::string> nodes, ranks;
  opts.add_options()("help,h", "show this help")(
      "format,f", po::value<std::string>(&a.format)->value_name("FORMAT"),
      "output format: text (default), json, markdown or html")(
      "out,o", po::value<std::string>(&a.output)->value_name("FILE"),
      "write the report to FILE (default, or -: standard output)")(
      "force", po::bool_switch(&a.force), "replace FILE if it exists")(
      "fail-on", po::value<std::string>(&a.fail_on)->value_name("WHAT"),
      "exit with status 4 when the report has a straggler verdict of medium or high "
      "confidence (straggler), detects a hang (hang), or either (any)")(
      "from", po::value<std::string>(&from)->value_name("T"),
      "only what starts at or after T: an ISO 8601 UTC time, nanoseconds since the epoch, or "
      "+OFFSET from the recording's start (+40s)")(
      "to", po::value<std::string>(&to)->value_name("T"), "only what starts at or before T")(
      "nodes", po::value<std::vector<std::string>>(&nodes)->composing()->value_name("NODES"),
      "only these nodes (comma-separated, repeatable)")(
      "ranks", po::value<std::vector<std::string>>(&ranks)->composing()->value_name("RANKS"),
      "only these ranks' NCCL, CUDA and GPU rows (0,3 or 4-7; repeatable)")(
      "comm", po::value<std::string>(&comm)->value_name("HASH"),
      "only this communicator's NCCL and GPU rows (comm_id_hash: 0x... as printed, or decimal)")(
      "all-nodes", po::bool_switch(&a.all_nodes),
      "list every node in the per-node table (default: the 10 latest when there are more)")(
      "no-integrity-check", po::bool_switch(&a.skip_integrity),
      "skip SQLite's quick_check of the input (faster on very large databases)")(
      "quiet,q", po::bool_switch(&a.quiet),
      "no progress and no final line; errors are still printed (the report's own warnings "
      "are part of the report)");
  po::options_description hidden;
  hidden.add_options()("output", po::value<std::string>(&output_alias),
                       "the old spelling of --out");
  ASSIGN_OR_RETURN(rs::cli::ParsedArgs parsed,
                   rs::cli::ParseArgs(rs::cli::ArgsOf(argc, argv), opts, hidden));
  const po::variables_map& vm = parsed.vm;
  const std::vector<std::string>& positional = parsed.positional;
  a.help = vm.count("help") > 0;
  if (a.help) return a;
  if (positional.size() != 1) {
    return rs::Error("expected one INPUT (a .rsb bundle or .rsdb merged database), got " +
                     std::to_string(positional.size()) + " argument(s)");
  }
  if (!output_alias.empty()) {
    if (!a.output.empty() && a.output != output_alias) {
      return rs::Error("-o/--out and --output name two files: give one");
    }
    a.output = output_alias;
  }
  if (!a.fail_on.empty() && a.fail_on != "straggler" && a.fail_on != "hang" && a.fail_on != "any") {
    return rs::Error("--fail-on '" + a.fail_on + "': use straggler, hang or any");
  }
  if (!from.empty()) {
    ASSIGN_OR_RETURN(a.filter.from, rs::ParseTimeArg(from, "--from"));
  }
  if (!to.empty()) {
    ASSIGN_OR_RETURN(a.filter.to, rs::ParseTimeArg(to, "--to"));
  }
  a.filter.nodes = rs::cli::SplitList(nodes);
  if (!nodes.empty() && a.filter.nodes.empty()) {
    return rs::Error("--nodes: no node names given (use --nodes node1,node3)");
  }
  if (!ranks.empty()) {
    ASSIGN_OR_RETURN(a.filter.ranks, rs::analyzer::ParseRanks(ranks));
  }
  if (!comm.empty()) {
    ASSIGN_OR_RETURN(a.filter.comm, rs::analyzer::ParseComm(comm));
  }
  a.input = positional[0];
  return a;
}

// What --fail-on asked for is in the report.
bool Found(const rs::analyzer::Report& r, const std::string& what) {
  const bool straggler = std::any_of(r.stragglers.begin(), r.stragglers.end(), [](const auto& s) {
    return rs::analyzer::AtLeastMedium(s.confidence);
  });
  const bool hang = r.hang.detected;
  if (what == "straggler") return straggler;
  if (what == "hang") return hang;
  return what == "any" && (straggler || hang);
}

}  // namespace

int RunReportCommand(int argc, char** argv) {
  using namespace rs::cli;
  const char* kName = "rankscope-analyze report";
  const int64_t started = rs::MonotonicNowNs();
  po::options_description opts;
  auto args = ParseArgs(argc, argv, opts);
  if (!args.ok()) {
    std::cerr << kName << ": " << rs::EscapeText(WithHelpHint(args.error().message(), kName))
              << "\n";
    return kExitUsage;
  }
  if (args->help) {
    std::cout << FormatHelp(kHelp, opts);
    return kExitOk;
  }
  auto format = rs::analyzer::ParseReportFormat(args->format);
  if (!format.ok()) {
    std::cerr << kName << ": " << rs::EscapeText(WithHelpHint(format.error().message(), kName))
              << "\n";
    return kExitUsage;
  }
  // Where the report goes, checked before any work: never the input, never an existing file
  // without --force.
  auto target =
      rs::CheckOutput(args->output.empty() ? "-" : args->output, args->force, {args->input});
  if (!target.ok()) {
    std::cerr << kName << ": " << rs::EscapeText(WithHelpHint(target.error().message(), kName))
              << "\n";
    return kExitUsage;
  }
  Progress progress(args->quiet);
  progress.Show(kName + std::string(": opening ") + rs::EscapeText(args->input) +
                " (decompressing, checking)...");
  auto opened = rs::OpenRankscopeFile(args->input, !args->skip_integrity);
  if (!opened.ok()) {
    progress.Done();
    std::cerr << kName << ": " << rs::EscapeText(opened.error().message()) << "\n";
    return kExitError;
  }
  auto filtered = rs::analyzer::ApplyReportFilter(opened->db(), args->filter,
                                                  rs::analyzer::RecordingStartNs(*opened));
  if (!filtered.ok()) {
    progress.Done();
    std::cerr << kName << ": " << rs::EscapeText(args->input) << ": "
              << rs::EscapeText(filtered.error().message()) << "\n";
    return kExitError;
  }
  progress.Show(kName + std::string(": analysing ") + rs::EscapeText(args->input) + "...");
  auto report = rs::analyzer::BuildReport(*opened);
  if (!report.ok()) {
    progress.Done();
    std::cerr << kName << ": " << rs::EscapeText(args->input) << ": "
              << rs::EscapeText(report.error().message()) << "\n";
    return kExitError;
  }
  if (!filtered->empty()) report->notes.insert(report->notes.begin(), *filtered);
  if (args->filter.to && report->hang.detected && !report->summary_nodes.empty()) {
    // A summary keeps each thread's latest CUDA call of the whole recording and the calls
    // that may wait for the device, not every launch (rs::Summarize).
    report->notes.push_back(
        "--to on nodes merged from summaries: what a hang's culprits were doing is the latest "
        "CUDA call their summary kept before --to (each thread's calls that may wait for the "
        "device, and its last call of the whole recording), which may be earlier than their "
        "last call before --to; merge their raw bundles for that");
  }
  if (args->all_nodes) report->node_rows = 0;
  progress.Done();
  const std::string text = rs::analyzer::Render(*report, *format);
  auto written = rs::WriteOutputText(*target, text);
  if (!written.ok()) {
    std::cerr << kName << ": " << rs::EscapeText(written.error().message()) << "\n";
    return kExitError;
  }
  if (!args->quiet) {
    std::cerr << kName << ": "
              << WroteLine(rs::EscapeText(target->shown()),
                           args->format + " report, " + std::to_string(text.size()) + " bytes",
                           rs::MonotonicNowNs() - started)
              << "\n";
  }
  if (!args->fail_on.empty() && Found(*report, args->fail_on)) return kExitFound;
  return kExitOk;
}
