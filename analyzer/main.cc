// rankscope-analyze: questions asked of a bundle (.rsb) or merged database (.rsdb).
//   query INPUT "SQL"   read-only SQL
//   schema INPUT [TABLE] the tables and views with their meanings, or one table's columns
//   report INPUT        stragglers, causes, hangs (report_command.h)
//   diff BASELINE OTHER what changed between two recordings (diff_command.h)
//   mcp INPUT...        an MCP server for AI assistants on standard input/output (mcp/)
#include <boost/program_options.hpp>

#include <unistd.h>

#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#ifdef RANKSCOPE_WITH_MCP
#include "analyzer/mcp/mcp_command.h"
#endif
#include "analyzer/diff_command.h"
#include "analyzer/query.h"
#include "analyzer/report_command.h"
#include "analyzer/summarize_command.h"
#include "rscore/bundle.h"
#include "rscore/cli.h"
#include "rscore/cli_help.h"
#include "rscore/clock.h"
#include "rscore/duration.h"
#include "rscore/output.h"
#include "rscore/text_escape.h"

namespace po = boost::program_options;

namespace {

constexpr const char* kName = "rankscope-analyze";

const rs::cli::HelpText kHelp = {
    .usage =
        "rankscope-analyze report INPUT [--format text|json|markdown|html] [-o FILE] ...\n"
        "rankscope-analyze diff BASELINE OTHER [--format text|json] [-o FILE] ...\n"
        "rankscope-analyze summarize BUNDLE... [-o FILE]\n"
        "rankscope-analyze query INPUT SQL|- [--format table|csv|json] [--limit N] ...\n"
        "rankscope-analyze schema INPUT [TABLE]\n"
        "rankscope-analyze mcp INPUT... [--trace-dir DIR]",
    .about =
        "Questions asked of a recording. INPUT is a node bundle (.rsb) or a merged database\n"
        "(.rsdb). Commands: report (stragglers, causes, hangs), summarize (a bundle reduced\n"
        "to what the report reads, for large jobs), diff (what changed between\n"
        "a good run and a bad one), query (read-only SQL), schema (the tables and what their\n"
        "columns hold), mcp (an MCP server for AI assistants, on standard input/output).\n"
        "Run 'rankscope-analyze COMMAND --help' for a command's options.",
    .examples = {{"rankscope-analyze report job.rsdb", "which node held the job back, and why"},
                 {"rankscope-analyze diff good.rsdb bad.rsdb",
                  "which ranks, collectives and causes changed between two runs"},
                 {"rankscope-analyze query job.rsdb \"SELECT node, COUNT(*) FROM tcp_events "
                  "GROUP BY node\"",
                  "read-only SQL over the recording"},
                 {"rankscope-analyze schema job.rsdb nccl_events",
                  "what each column of a table holds"},
                 {"rankscope-analyze mcp job.rsdb",
                  "an MCP server for AI assistants (started by an MCP client)"}},
    .man_page = "rankscope-analyze(1)",
    .more_exit_codes = ", 4 report --fail-on found what was asked for"};

// A usage error of `command` ("rankscope-analyze query"), as every tool prints one.
int UsageError(const std::string& command, const std::string& message) {
  std::cerr << command << ": " << rs::EscapeText(rs::cli::WithHelpHint(message, command)) << "\n";
  return rs::cli::kExitUsage;
}

const rs::cli::HelpText kQueryHelp = {
    .usage =
        "rankscope-analyze query INPUT SQL|- [--format table|csv|json] [--limit N]"
        " [--timeout DURATION]",
    .about =
        "Runs one read-only SQL statement over a bundle (.rsb) or merged database (.rsdb).\n"
        "SQL - reads the statement from standard input. INSERT/UPDATE/DELETE, schema\n"
        "changes, ATTACH, PRAGMAs other than the schema-describing ones and SQL functions\n"
        "other than pure functions of the values read are refused. A query still running\n"
        "after --timeout (default 30s) stops with an error.",
    .examples =
        {{"rankscope-analyze query job.rsdb \"SELECT rank, COUNT(*) FROM nccl_events GROUP BY "
          "rank\"",
          "calls per rank"},
         {"rankscope-analyze query job.rsdb - --format csv < slow_ranks.sql",
          "a query kept in a file, as CSV"}},
    .man_page = "rankscope-analyze(1)",
    .more_exit_codes = ""};

const rs::cli::HelpText kSchemaHelp = {
    .usage = "rankscope-analyze schema INPUT [TABLE]",
    .about =
        "Lists the tables and views of a bundle (.rsb) or merged database (.rsdb) with their\n"
        "row counts and what they hold; with TABLE, its columns with type and meaning.\n"
        "The views (TABLE_v) add readable UTC times and hex communicator hashes to the\n"
        "event tables, for query.",
    .examples = {{"rankscope-analyze schema job.rsdb", "tables, views and row counts"},
                 {"rankscope-analyze schema job.rsdb gpu_ops",
                  "what each column of gpu_ops holds"}},
    .man_page = "rankscope-analyze(1)",
    .more_exit_codes = ""};

// Opens INPUT read-only with the query views, and the read-only guard installed.
rs::Result<rs::OpenedDb> OpenForQuery(const std::string& input) {
  ASSIGN_OR_RETURN(rs::OpenedDb file, rs::OpenRankscopeFile(input));
  RETURN_IF_ERROR(rs::analyzer::CreateQueryViews(file.db()));
  RETURN_IF_ERROR(rs::analyzer::InstallReadOnlyGuard(file.db()));
  return file;
}

// Where query and schema write (-o): standard output as the rows come, or a file that
// appears complete or not at all (rscore/output.h), the input never, an existing file only
// with --force.
class TextOutput {
 public:
  // The target checked before any work; a usage error (exit 2) where it is refused.
  static rs::Result<TextOutput> Check(const std::string& path, bool force,
                                      const std::string& input) {
    ASSIGN_OR_RETURN(rs::OutputTarget target,
                     rs::CheckOutput(path.empty() ? "-" : path, force, {input}));
    TextOutput out;
    out.target_ = std::move(target);
    return out;
  }
  // The stream to write into (a file's is opened here).
  rs::Result<std::ostream*> Open() {
    if (direct()) {
      stream_ = std::make_unique<rs::FdOstream>(STDOUT_FILENO, "standard output");
    } else {
      ASSIGN_OR_RETURN(file_, rs::OutputFile::Create(target_));
      stream_ = std::make_unique<rs::FdOstream>(file_.fd(), file_.shown());
    }
    return stream_.get();
  }
  // Every write checked, then the file renamed onto its name.
  rs::Result<void> Finish() {
    RETURN_IF_ERROR(stream_->Close());
    if (!direct()) RETURN_IF_ERROR(file_.Commit());
    return rs::Ok();
  }
  std::string shown() const { return target_.shown(); }

 private:
  bool direct() const { return target_.kind == rs::OutputTarget::Kind::kStdout; }
  rs::OutputTarget target_;
  rs::OutputFile file_;
  std::unique_ptr<rs::FdOstream> stream_;
};

int RunSchemaCommand(int argc, char** argv) {
  const int64_t started = rs::MonotonicNowNs();
  po::options_description opts;
  std::string output;
  opts.add_options()("help,h", "show this help")(
      "out,o", po::value<std::string>(&output)->value_name("FILE"),
      "write to FILE ('-': standard output, the default)")("force", "replace FILE if it exists")(
      "quiet,q", "no final line; errors are still printed");
  auto parsed = rs::cli::ParseArgs(rs::cli::ArgsOf(argc, argv), opts, {});
  if (!parsed.ok()) return UsageError("rankscope-analyze schema", parsed.error().message());
  const po::variables_map& vm = parsed->vm;
  const std::vector<std::string>& positional = parsed->positional;
  if (vm.count("help")) {
    std::cout << rs::cli::FormatHelp(kSchemaHelp, opts);
    return rs::cli::kExitOk;
  }
  if (positional.empty() || positional.size() > 2) {
    return UsageError("rankscope-analyze schema", "expected INPUT and at most one TABLE, got " +
                                                      std::to_string(positional.size()) +
                                                      " argument(s)");
  }
  auto target = TextOutput::Check(output, vm.count("force") > 0, positional[0]);
  if (!target.ok()) return UsageError("rankscope-analyze schema", target.error().message());
  auto opened = OpenForQuery(positional[0]);
  if (!opened.ok()) {
    std::cerr << "rankscope-analyze schema: " << rs::EscapeText(opened.error().message()) << "\n";
    return rs::cli::kExitError;
  }
  auto out = target->Open();  // every write checked
  rs::Result<void> printed = out.ok() ? rs::Ok() : rs::Result<void>(out.error());
  if (printed.ok()) {
    printed = positional.size() == 1
                  ? rs::analyzer::PrintSchema(opened->db(), **out)
                  : rs::analyzer::PrintTableSchema(opened->db(), positional[1], **out);
  }
  if (printed.ok()) printed = target->Finish();
  if (!printed.ok()) {
    std::cerr << "rankscope-analyze schema: " << rs::EscapeText(printed.error().message()) << "\n";
    return rs::cli::kExitError;
  }
  if (!vm.count("quiet")) {
    const std::string what = positional.size() == 1 ? "the tables and views of " + positional[0]
                                                    : "the columns of " + positional[1];
    std::cerr << "rankscope-analyze schema: "
              << rs::cli::WroteLine(target->shown(), what, rs::MonotonicNowNs() - started) << "\n";
  }
  return rs::cli::kExitOk;
}

int RunQueryCommand(int argc, char** argv) {
  const char* kQuery = "rankscope-analyze query";
  const int64_t started = rs::MonotonicNowNs();
  po::options_description opts;
  std::string format = "table";
  int64_t limit = 10000;
  std::string timeout = "30s";
  std::string output;
  opts.add_options()("help,h", "show this help")(
      "format,f", po::value<std::string>(&format)->value_name("FORMAT"),
      "output format: table (default), csv or json")(
      "limit,n", po::value<int64_t>(&limit)->value_name("N"),
      "print at most N rows (default 10000; 0 = no limit)")(
      "timeout", po::value<std::string>(&timeout)->value_name("DURATION"),
      "stop a query still running after DURATION (500ms, 30s, 5m; default 30s)")(
      "out,o", po::value<std::string>(&output)->value_name("FILE"),
      "write the rows to FILE ('-': standard output, the default)")(
      "force", "replace FILE if it exists")("quiet,q",
                                            "no final line; warnings and errors are still printed");
  po::options_description hidden;
  std::vector<std::string> positional;
  hidden.add_options()("args", po::value<std::vector<std::string>>(&positional));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("args", -1);
  // SQL pasted by users often starts with a "-- comment": an argument containing whitespace
  // is always positional, never an option. Boost sees only the others.
  std::vector<std::string> plain_args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.find_first_of(" \t\n") == std::string::npos) plain_args.push_back(a);
  }
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(plain_args).options(all).positional(pos).run(), vm);
    po::notify(vm);
    // Put the positional arguments back in command-line order.
    std::vector<std::string> ordered;
    size_t j = 0;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a.find_first_of(" \t\n") != std::string::npos) {
        ordered.push_back(a);
      } else if (j < positional.size() && a == positional[j]) {
        ordered.push_back(a);
        ++j;
      }
    }
    positional = std::move(ordered);
  } catch (const po::error& e) {
    return UsageError(kQuery, e.what());
  }
  if (vm.count("help")) {
    std::cout << rs::cli::FormatHelp(kQueryHelp, opts);
    return rs::cli::kExitOk;
  }
  if (positional.size() != 2) {
    return UsageError(kQuery, "expected INPUT and one SQL string, got " +
                                  std::to_string(positional.size()) + " argument(s)");
  }
  auto fmt = rs::analyzer::ParseOutputFormat(format);
  if (!fmt.ok()) return UsageError(kQuery, fmt.error().message());
  if (limit < 0) return UsageError(kQuery, "--limit must be >= 0");
  auto timeout_ns = rs::ParseDuration(timeout);
  if (!timeout_ns.ok()) return UsageError(kQuery, "--timeout: " + timeout_ns.error().message());
  auto target = TextOutput::Check(output, vm.count("force") > 0, positional[0]);
  if (!target.ok()) return UsageError(kQuery, target.error().message());
  if (rs::cli::IsStdio(positional[1])) {  // the statement from standard input
    auto sql = rs::cli::ReadStdin(1 << 20);
    if (!sql.ok()) {
      std::cerr << "rankscope-analyze query: " << rs::EscapeText(sql.error().message()) << "\n";
      return rs::cli::kExitError;
    }
    positional[1] = std::move(sql).value();
  }
  auto opened = OpenForQuery(positional[0]);
  if (!opened.ok()) {
    std::cerr << "rankscope-analyze query: " << rs::EscapeText(opened.error().message()) << "\n";
    return 1;
  }
  auto out = target->Open();  // every write checked
  if (!out.ok()) {
    std::cerr << "rankscope-analyze query: " << rs::EscapeText(out.error().message()) << "\n";
    return rs::cli::kExitError;
  }
  auto stats = rs::analyzer::RunQuery(opened->db(), positional[1],
                                  {*fmt, limit, timeout_ns.value(), timeout}, **out);
  if (!stats.ok()) {
    std::cerr << "rankscope-analyze query: " << rs::EscapeText(stats.error().message()) << "\n";
    return 1;
  }
  if (auto flushed = target->Finish(); !flushed.ok()) {
    std::cerr << "rankscope-analyze query: " << rs::EscapeText(flushed.error().message()) << "\n";
    return rs::cli::kExitError;
  }
  if (stats->truncated) {
    std::cerr << "rankscope-analyze query: output stopped after " << stats->rows
              << " rows (raise --limit, or 0 for all)\n";
  }
  if (!vm.count("quiet")) {
    std::cerr << kQuery << ": "
              << rs::cli::WroteLine(target->shown(), std::to_string(stats->rows) + " row(s)",
                                    rs::MonotonicNowNs() - started)
              << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    return UsageError(kName, "expected a command: report, summarize, diff, query, schema or mcp");
  }
  if (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    po::options_description opts;
    opts.add_options()("help,h", "show this help")("version", "print the version");
    std::cout << rs::cli::FormatHelp(kHelp, opts);
    return rs::cli::kExitOk;
  }
  std::string cmd = argv[1];
  if (cmd == "--version") {
    std::cout << "rankscope-analyze " << RANKSCOPE_VERSION << "\n";
    return 0;
  }
  if (cmd == "query") return RunQueryCommand(argc - 1, argv + 1);
  if (cmd == "schema") return RunSchemaCommand(argc - 1, argv + 1);
  if (cmd == "report") return RunReportCommand(argc - 1, argv + 1);
  if (cmd == "diff") return RunDiffCommand(argc - 1, argv + 1);
  if (cmd == "summarize") return RunSummarizeCommand(argc - 1, argv + 1);
  if (cmd == "mcp") {
#ifdef RANKSCOPE_WITH_MCP
    return RunMcpCommand(argc - 1, argv + 1);
#else
    std::cerr << "rankscope-analyze mcp: not in this build (it needs rankscope-export's "
                 "dependencies: libprotobuf-dev, protobuf-compiler, zlib1g-dev)\n";
    return rs::cli::kExitError;
#endif
  }
  return UsageError(
      kName, "unknown command '" + cmd + "': use report, summarize, diff, query, schema or mcp");
}
