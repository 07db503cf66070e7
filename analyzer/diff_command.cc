// `rankscope-analyze diff BASELINE OTHER [--format text|json] [-o FILE]`.
#include "analyzer/diff_command.h"

#include <boost/program_options.hpp>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/call_semantics.h"
#include "analyzer/diff.h"
#include "analyzer/report.h"
#include "rscore/bundle.h"
#include "rscore/cli.h"
#include "rscore/cli_help.h"
#include "rscore/clock.h"
#include "rscore/output.h"
#include "rscore/text_escape.h"

namespace po = boost::program_options;

namespace {

constexpr const char* kName = "rankscope-analyze diff";

struct DiffArgs {
  std::string baseline, other;
  std::string format = "text";
  std::string output;
  int64_t rows = 10;
  bool help = false, force = false, quiet = false, skip_integrity = false;
};

const rs::cli::HelpText kHelp = {
    .usage =
        "rankscope-analyze diff BASELINE OTHER [--format text|json] [-o FILE] [--force]\n"
        "       [--rows N]",
    .about =
        "A good run against a bad one: each recording (.rsb or .rsdb) goes through the\n"
        "report's analysis, and the diff lines them up: the findings that appeared, went or\n"
        "stayed (matched by the ranks they name), each rank's lateness, times last and\n"
        "collective duration (ranks matched by global rank, so host names may differ), and\n"
        "each kind of collective's time (operation, count, data type and ranks; communicator\n"
        "ids are new in every run). It judges nothing itself; where the recordings' shapes or\n"
        "timing differ it says so first.",
    .examples = {{"rankscope-analyze diff good.rsdb bad.rsdb",
                  "what changed between yesterday's run and today's"},
                 {"rankscope-analyze diff good.rsdb bad.rsdb --format json | jq '.ranks[0]'",
                  "the rank whose lateness rose the most"}},
    .man_page = "rankscope-analyze(1)",
    .more_exit_codes = ""};

rs::Result<DiffArgs> ParseArgs(int argc, char** argv, po::options_description& opts) {
  DiffArgs a;
  opts.add_options()("help,h", "show this help")(
      "format,f", po::value<std::string>(&a.format)->value_name("FORMAT"),
      "output format: text (default) or json")(
      "out,o", po::value<std::string>(&a.output)->value_name("FILE"),
      "write the diff to FILE (default, or -: standard output)")("force", po::bool_switch(&a.force),
                                                                 "replace FILE if it exists")(
      "rows", po::value<int64_t>(&a.rows)->value_name("N"),
      "ranks and kinds of collective listed in text (default 10; 0: all; JSON has all)")(
      "no-integrity-check", po::bool_switch(&a.skip_integrity),
      "skip SQLite's quick_check of the inputs (faster on very large databases)")(
      "quiet,q", po::bool_switch(&a.quiet), "no progress and no final line");
  ASSIGN_OR_RETURN(rs::cli::ParsedArgs parsed,
                   rs::cli::ParseArgs(rs::cli::ArgsOf(argc, argv), opts, {}));
  a.help = parsed.vm.count("help") > 0;
  if (a.help) return a;
  if (parsed.positional.size() != 2) {
    return rs::Error(
        "expected two inputs, BASELINE and OTHER (each a .rsb bundle or .rsdb "
        "merged database), got " +
        std::to_string(parsed.positional.size()) + " argument(s)");
  }
  if (a.format != "text" && a.format != "json") {
    return rs::Error("--format '" + a.format + "': use text or json");
  }
  if (a.rows < 0) return rs::Error("--rows " + std::to_string(a.rows) + ": use 0 or more");
  a.baseline = parsed.positional[0];
  a.other = parsed.positional[1];
  return a;
}

struct Analysed {
  rs::analyzer::Report report;
  rs::analyzer::CollectiveData collectives;
};

rs::Result<Analysed> Analyse(const std::string& path, bool check, rs::cli::Progress& progress) {
  progress.Show(kName + std::string(": analysing ") + rs::EscapeText(path) + "...");
  ASSIGN_OR_RETURN(rs::OpenedDb opened, rs::OpenRankscopeFile(path, check));
  Analysed out;
  ASSIGN_OR_RETURN(out.report, rs::analyzer::BuildReport(opened));
  ASSIGN_OR_RETURN(out.collectives,
                   rs::analyzer::LoadComparedCollectives(opened.db(), out.report.clock));
  return out;
}

}  // namespace

int RunDiffCommand(int argc, char** argv) {
  using namespace rs::cli;
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
  auto target = rs::CheckOutput(args->output.empty() ? "-" : args->output, args->force,
                                {args->baseline, args->other});
  if (!target.ok()) {
    std::cerr << kName << ": " << rs::EscapeText(WithHelpHint(target.error().message(), kName))
              << "\n";
    return kExitUsage;
  }
  Progress progress(args->quiet);
  std::optional<Analysed> sides[2];
  const std::string* paths[2] = {&args->baseline, &args->other};
  for (int i = 0; i < 2; ++i) {
    auto analysed = Analyse(*paths[i], !args->skip_integrity, progress);
    if (!analysed.ok()) {
      progress.Done();
      std::cerr << kName << ": " << (i == 0 ? "BASELINE " : "OTHER ") << rs::EscapeText(*paths[i])
                << ": " << rs::EscapeText(analysed.error().message()) << "\n";
      return kExitError;
    }
    analysed->report.input = *paths[i];
    sides[i] = std::move(*analysed);
  }
  progress.Done();
  const rs::analyzer::Diff d = rs::analyzer::BuildDiff(sides[0]->report, sides[0]->collectives,
                                               sides[1]->report, sides[1]->collectives);
  const std::string text = args->format == "json"
                               ? rs::analyzer::RenderDiffJson(d)
                               : rs::analyzer::RenderDiffText(d, static_cast<size_t>(args->rows));
  if (auto written = rs::WriteOutputText(*target, text); !written.ok()) {
    std::cerr << kName << ": " << rs::EscapeText(written.error().message()) << "\n";
    return kExitError;
  }
  if (!args->quiet) {
    std::cerr << kName << ": "
              << WroteLine(rs::EscapeText(target->shown()),
                           args->format + " diff, " + std::to_string(text.size()) + " bytes",
                           rs::MonotonicNowNs() - started)
              << "\n";
  }
  return kExitOk;
}
