// `rankscope-analyze report INPUT [--format text|json|markdown|html] [-o FILE]`.
#include "report_command.h"

#include <boost/program_options.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "report.h"
#include "report_render.h"
#include "rscore/bundle.h"

namespace po = boost::program_options;

namespace {

struct ReportArgs {
  std::string input;
  std::string format = "text";
  std::string output;
  bool help = false;
  bool skip_integrity = false;
};

// Boost reports bad options by throwing; turned into a Result here.
rs::Result<ReportArgs> ParseArgs(int argc, char** argv, po::options_description& opts) {
  ReportArgs a;
  opts.add_options()("help,h", "show this help")(
      "format,f", po::value<std::string>(&a.format),
      "output format: text (default), json, markdown or html")(
      "output,o", po::value<std::string>(&a.output), "write the report to FILE (default stdout)")(
      "no-integrity-check", po::bool_switch(&a.skip_integrity),
      "skip SQLite's quick_check of the input (faster on very large databases)");
  po::options_description hidden;
  std::vector<std::string> positional;
  hidden.add_options()("args", po::value<std::vector<std::string>>(&positional));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("args", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return rs::Error(std::string(e.what()) + " (see --help)");
  }
  a.help = vm.count("help") > 0;
  if (a.help) return a;
  if (positional.size() != 1) {
    return rs::Error("expected one INPUT (a .rsb bundle or .rsdb merged database), got " +
                     std::to_string(positional.size()) + " argument(s)");
  }
  a.input = positional[0];
  return a;
}

rs::Result<void> WriteOutput(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text;
    std::cout.flush();
    if (!std::cout) return rs::Error("cannot write the report to stdout");
    return rs::Ok();
  }
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return rs::Error("cannot create " + tmp + " (-o): check the directory exists");
    out << text;
    out.flush();
    if (!out) return rs::Error("cannot write " + tmp + " (-o): disk full?");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return rs::Error("cannot rename " + tmp + " to " + path + " (-o)");
  }
  return rs::Ok();
}

}  // namespace

int RunReportCommand(int argc, char** argv) {
  const char* kName = "rankscope-analyze report";
  po::options_description opts(
      "rankscope-analyze report INPUT [--format text|json|markdown|html] [-o FILE]");
  auto args = ParseArgs(argc, argv, opts);
  if (!args.ok()) {
    std::cerr << kName << ": " << args.error().message() << "\n";
    return 2;
  }
  if (args->help) {
    std::cout << opts
              << "\nINPUT is a merged database (.rsdb, clock-aligned) or one node's bundle (.rsb,"
                 "\nclock as recorded). The report names the straggler rank/node and ranks its"
                 "\ncauses (network, cpu_contention, io, compute, hang, unknown), analyses hangs"
                 "\nand gives each conclusion's confidence, evidence and clock error bound."
                 "\nSee rankscope-analyze(1).\n";
    return 0;
  }
  auto format = analyzer::ParseReportFormat(args->format);
  if (!format.ok()) {
    std::cerr << kName << ": " << format.error().message() << "\n";
    return 2;
  }
  auto opened = rs::OpenRankscopeFile(args->input, !args->skip_integrity);
  if (!opened.ok()) {
    std::cerr << kName << ": " << opened.error().message() << "\n";
    return 1;
  }
  auto report = analyzer::BuildReport(*opened);
  if (!report.ok()) {
    std::cerr << kName << ": " << args->input << ": " << report.error().message() << "\n";
    return 1;
  }
  auto written = WriteOutput(args->output, analyzer::Render(*report, *format));
  if (!written.ok()) {
    std::cerr << kName << ": " << written.error().message() << "\n";
    return 1;
  }
  return 0;
}
