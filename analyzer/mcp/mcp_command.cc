#include "analyzer/mcp/mcp_command.h"

#include <unistd.h>

#include <boost/program_options.hpp>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "analyzer/mcp/recording.h"
#include "analyzer/mcp/server.h"
#include "rscore/cli.h"
#include "rscore/cli_help.h"

namespace po = boost::program_options;

namespace {

constexpr const char* kName = "rankscope-analyze mcp";

const rs::cli::HelpText kHelp = {
    .usage =
        "rankscope-analyze mcp INPUT... [--trace-dir DIR] [--verbose] [-q] [--no-integrity-check]",
    .about =
        "An MCP server (Model Context Protocol) for AI assistants, over standard input and\n"
        "output: JSON-RPC 2.0, one message per line, protocol revisions 2025-11-25 (the\n"
        "newest) back to 2024-10-07. Its tools answer questions about one recording: summary,\n"
        "find_stragglers, hang_report, explain_collective, node_timeline, query (read-only\n"
        "SQL) and export_trace (a Perfetto trace of a window, written to --trace-dir); its\n"
        "resources are the schema and the text report. INPUT is a merged database (.rsdb) or\n"
        "one node's bundle (.rsb); several bundles, or directories of them, are merged first\n"
        "as rankscope-merge does (into a file without a name, gone when the server ends).\n"
        "No network; the log goes to standard error; the end of standard input ends it.",
    .examples = {{"rankscope-analyze mcp job.rsdb",
                  "the server an MCP client starts (see README: Claude Desktop/Code's mcpServers)"},
                 {"rankscope-analyze mcp bundles/ --trace-dir ~/traces",
                  "merge a directory's bundles first; exported traces go to ~/traces"},
                 {"echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}' | "
                  "rankscope-analyze mcp job.rsdb",
                  "one request by hand"}},
    .man_page = "rankscope-analyze(1)",
    .more_exit_codes = ""};

// --trace-dir: an existing directory the server may write into.
bool CheckTraceDir(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    std::cerr << kName << ": --trace-dir " << dir << ": not a directory\n";
    return false;
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    std::cerr << kName << ": --trace-dir " << dir << ": not writable\n";
    return false;
  }
  return true;
}

}  // namespace

int RunMcpCommand(int argc, char** argv) {
  using namespace rs::cli;
  po::options_description opts;
  std::string trace_dir;
  bool verbose = false, skip_integrity = false, quiet = false;
  opts.add_options()("help,h", "show this help")(
      "trace-dir", po::value<std::string>(&trace_dir)->value_name("DIR"),
      "where export_trace writes its traces (default: $TMPDIR, else /tmp)")(
      "verbose,v", po::bool_switch(&verbose), "log every request on standard error")(
      "quiet,q", po::bool_switch(&quiet),
      "no lines on standard error but warnings and errors (not even the start and end)")(
      "no-integrity-check", po::bool_switch(&skip_integrity),
      "skip SQLite's quick_check of the input (faster on very large databases)");
  auto parsed = ParseArgs(ArgsOf(argc, argv), opts, {});
  if (!parsed.ok()) {
    std::cerr << kName << ": " << WithHelpHint(parsed.error().message(), kName) << "\n";
    return kExitUsage;
  }
  if (quiet && verbose) {
    std::cerr << kName << ": " << WithHelpHint("-q and --verbose contradict each other", kName)
              << "\n";
    return kExitUsage;
  }
  if (parsed->vm.count("help")) {
    std::cout << FormatHelp(kHelp, opts);
    return kExitOk;
  }
  const std::vector<std::string>& inputs = parsed->positional;
  if (inputs.empty()) {
    std::cerr << kName << ": "
              << WithHelpHint(
                     "expected INPUT: a merged database (.rsdb), a bundle (.rsb), or "
                     "bundles to merge",
                     kName)
              << "\n";
    return kExitUsage;
  }
  for (const std::string& input : inputs) {
    if (IsStdio(input)) {
      std::cerr << kName << ": "
                << WithHelpHint(
                       "INPUT '-': standard input carries the protocol; give the "
                       "recording as a file",
                       kName)
                << "\n";
      return kExitUsage;
    }
  }
  if (trace_dir.empty()) {
    std::error_code ec;
    trace_dir = std::filesystem::temp_directory_path(ec).string();
    if (ec) trace_dir = "/tmp";
  }
  if (!CheckTraceDir(trace_dir)) return kExitUsage;
  std::signal(SIGPIPE, SIG_IGN);  // a client gone away is a failed write, said on the log

  auto recording = rs::analyzer::mcp::Recording::Open(inputs, !skip_integrity, std::cerr);
  if (!recording.ok()) {
    std::cerr << kName << ": " << recording.error().message() << "\n";
    return kExitError;
  }
  rs::analyzer::mcp::Server server(
      **recording, {.version = RANKSCOPE_VERSION, .trace_dir = trace_dir, .verbose = verbose},
      std::cerr);
  if (!quiet) {
    std::cerr << kName << ": serving " << (*recording)->name() << " on standard input and output"
              << (::isatty(STDIN_FILENO) ? " (a terminal: an MCP client starts this server; one "
                                           "JSON-RPC message per line)"
                                         : "")
              << "\n";
  }
  const int status = server.Serve(STDIN_FILENO, STDOUT_FILENO);
  if (!quiet || status != 0) {
    std::cerr << kName << ": " << (status == 0 ? "standard input closed" : "stopped") << " after "
              << server.requests() << " request(s)\n";
  }
  return status == 0 ? kExitOk : kExitError;
}
