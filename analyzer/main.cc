// rankscope-analyze: questions asked of a bundle (.rsb) or merged database (.rsdb).
//   query INPUT "SQL"   read-only SQL
//   schema INPUT [TABLE] the tables and views with their meanings, or one table's columns
//   report INPUT        stragglers, causes, hangs (report_command.h)
//   mcp INPUT...        an MCP server for AI assistants on standard input/output (mcp/)
#include <boost/program_options.hpp>

#include <unistd.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#ifdef RANKSCOPE_WITH_MCP
#include "mcp/mcp_command.h"
#endif
#include "query.h"
#include "report_command.h"
#include "rscore/bundle.h"
#include "rscore/cli.h"
#include "rscore/cli_help.h"
#include "rscore/duration.h"
#include "rscore/output.h"

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: rankscope-analyze query INPUT SQL|- [--format table|csv|json] [--limit N]\n"
    "                               [--timeout DURATION]\n"
    "       rankscope-analyze schema INPUT [TABLE]\n"
    "       rankscope-analyze report INPUT [--format text|json|markdown|html] [-o FILE]\n"
    "                                [--force]\n"
    "       rankscope-analyze mcp INPUT... [--trace-dir DIR]\n"
    "\n"
    "INPUT is a node bundle (.rsb) or a merged database (.rsdb).\n"
    "\n"
    "examples:\n"
    "  rankscope-analyze report job.rsdb\n"
    "      which node held the job back, and why\n"
    "  rankscope-analyze query job.rsdb \"SELECT node, COUNT(*) FROM tcp_events GROUP BY node\"\n"
    "      read-only SQL over the recording\n"
    "  rankscope-analyze schema job.rsdb nccl_events\n"
    "      what each column of a table holds\n"
    "  rankscope-analyze mcp job.rsdb\n"
    "      an MCP server for AI assistants (started by an MCP client)\n"
    "\n"
    "Run 'rankscope-analyze COMMAND --help' for a command's options.\n";

constexpr const char* kExitLine =
    "exit status: 0 done, 1 error, 2 usage error, 3 partial (some inputs skipped),\n"
    "4 report --fail-on found what was asked for.\nSee rankscope-analyze(1).\n";

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
    .man_page = "rankscope-analyze(1)"};

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
    .man_page = "rankscope-analyze(1)"};

// Opens INPUT read-only with the query views, and the read-only guard installed.
rs::Result<rs::OpenedDb> OpenForQuery(const std::string& input) {
  ASSIGN_OR_RETURN(rs::OpenedDb file, rs::OpenRankscopeFile(input));
  RETURN_IF_ERROR(analyzer::CreateQueryViews(file.db()));
  RETURN_IF_ERROR(analyzer::InstallReadOnlyGuard(file.db()));
  return file;
}

int RunSchemaCommand(int argc, char** argv) {
  po::options_description opts;
  opts.add_options()("help,h", "show this help");
  auto parsed = rs::cli::ParseArgs(rs::cli::ArgsOf(argc, argv), opts, {}, "see --help");
  if (!parsed.ok()) {
    std::cerr << "rankscope-analyze schema: " << parsed.error().message() << "\n";
    return rs::cli::kExitUsage;
  }
  const po::variables_map& vm = parsed->vm;
  const std::vector<std::string>& positional = parsed->positional;
  if (vm.count("help")) {
    std::cout << rs::cli::FormatHelp(kSchemaHelp, opts);
    return rs::cli::kExitOk;
  }
  if (positional.empty() || positional.size() > 2) {
    std::cerr << "rankscope-analyze schema: expected INPUT and at most one TABLE, got "
              << positional.size() << " argument(s)\n(see --help)\n";
    return rs::cli::kExitUsage;
  }
  auto opened = OpenForQuery(positional[0]);
  if (!opened.ok()) {
    std::cerr << "rankscope-analyze schema: " << opened.error().message() << "\n";
    return rs::cli::kExitError;
  }
  rs::FdOstream out(STDOUT_FILENO, "standard output");  // every write checked
  auto printed = positional.size() == 1
                     ? analyzer::PrintSchema(opened->db(), out)
                     : analyzer::PrintTableSchema(opened->db(), positional[1], out);
  if (!printed.ok()) {
    std::cerr << "rankscope-analyze schema: " << printed.error().message() << "\n";
    return rs::cli::kExitError;
  }
  if (auto flushed = out.Close(); !flushed.ok()) {
    std::cerr << "rankscope-analyze schema: " << flushed.error().message() << "\n";
    return rs::cli::kExitError;
  }
  return rs::cli::kExitOk;
}

int RunQueryCommand(int argc, char** argv) {
  po::options_description opts;
  std::string format = "table";
  int64_t limit = 10000;
  std::string timeout = "30s";
  opts.add_options()("help,h", "show this help")(
      "format,f", po::value<std::string>(&format)->value_name("FORMAT"),
      "output format: table (default), csv or json")(
      "limit,n", po::value<int64_t>(&limit)->value_name("N"),
      "print at most N rows (default 10000; 0 = no limit)")(
      "timeout", po::value<std::string>(&timeout)->value_name("DURATION"),
      "stop a query still running after DURATION (500ms, 30s, 5m; default 30s)");
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
    std::cerr << "rankscope-analyze query: " << e.what() << "\n(see --help)\n";
    return rs::cli::kExitUsage;
  }
  if (vm.count("help")) {
    std::cout << rs::cli::FormatHelp(kQueryHelp, opts);
    return rs::cli::kExitOk;
  }
  if (positional.size() != 2) {
    std::cerr << "rankscope-analyze query: expected INPUT and one SQL string, got "
              << positional.size() << " argument(s)\n"
              << kUsage;
    return 2;
  }
  auto fmt = analyzer::ParseOutputFormat(format);
  if (!fmt.ok()) {
    std::cerr << "rankscope-analyze query: " << fmt.error().message() << "\n";
    return 2;
  }
  if (limit < 0) {
    std::cerr << "rankscope-analyze query: --limit must be >= 0\n";
    return 2;
  }
  auto timeout_ns = rs::ParseDuration(timeout);
  if (!timeout_ns.ok()) {
    std::cerr << "rankscope-analyze query: --timeout: " << timeout_ns.error().message() << "\n";
    return 2;
  }
  if (rs::cli::IsStdio(positional[1])) {  // the statement from standard input
    auto sql = rs::cli::ReadStdin(1 << 20);
    if (!sql.ok()) {
      std::cerr << "rankscope-analyze query: " << sql.error().message() << "\n";
      return rs::cli::kExitError;
    }
    positional[1] = std::move(sql).value();
  }
  auto opened = OpenForQuery(positional[0]);
  if (!opened.ok()) {
    std::cerr << "rankscope-analyze query: " << opened.error().message() << "\n";
    return 1;
  }
  rs::FdOstream out(STDOUT_FILENO, "standard output");  // every write checked
  auto stats = analyzer::RunQuery(opened->db(), positional[1],
                                  {*fmt, limit, timeout_ns.value(), timeout}, out);
  if (!stats.ok()) {
    std::cerr << "rankscope-analyze query: " << stats.error().message() << "\n";
    return 1;
  }
  if (auto flushed = out.Close(); !flushed.ok()) {
    std::cerr << "rankscope-analyze query: " << flushed.error().message() << "\n";
    return rs::cli::kExitError;
  }
  if (stats->truncated) {
    std::cerr << "rankscope-analyze query: output stopped after " << stats->rows
              << " rows (raise --limit, or 0 for all)\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    (argc < 2 ? std::cerr : std::cout) << kUsage << "\n" << kExitLine;
    return argc < 2 ? rs::cli::kExitUsage : rs::cli::kExitOk;
  }
  std::string cmd = argv[1];
  if (cmd == "--version") {
    std::cout << "rankscope-analyze " << RANKSCOPE_VERSION << "\n";
    return 0;
  }
  if (cmd == "query") return RunQueryCommand(argc - 1, argv + 1);
  if (cmd == "schema") return RunSchemaCommand(argc - 1, argv + 1);
  if (cmd == "report") return RunReportCommand(argc - 1, argv + 1);
  if (cmd == "mcp") {
#ifdef RANKSCOPE_WITH_MCP
    return RunMcpCommand(argc - 1, argv + 1);
#else
    std::cerr << "rankscope-analyze mcp: not in this build (it needs rankscope-export's "
                 "dependencies: libprotobuf-dev, protobuf-compiler, zlib1g-dev)\n";
    return rs::cli::kExitError;
#endif
  }
  std::cerr << "rankscope-analyze: unknown command '" << cmd << "'\n" << kUsage;
  return 2;
}
