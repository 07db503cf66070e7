#include "exporter/export_options.h"

#include <boost/program_options.hpp>

#include <cctype>
#include <charconv>
#include <sstream>

#include "rscore/cli.h"
#include "rscore/cli_help.h"
#include "rscore/duration.h"

namespace rs::exporter {
namespace {

namespace po = boost::program_options;

const rs::cli::HelpText kHelp = {
    .usage =
        "rankscope-export INPUT -o OUT [--format perfetto|chrome-json] [--from T] [--to T]\n"
        "       [--nodes NODE[,NODE...]] [--report JSON] [--compression deflate|none]",
    .about =
        "Writes a merged database (.rsdb) or one node bundle (.rsb) as a Perfetto trace\n"
        "(native protobuf: open it in ui.perfetto.dev) or as Chrome trace JSON.\n"
        "\n"
        "T is an ISO 8601 UTC time (2026-11-25T11:38:01.5Z), wall-clock nanoseconds\n"
        "(1760000000123456789) or an offset from the recording's start (+1.5s, +250ms, +0;\n"
        "the same zero as the report's). Events whose start lies in [from, to] are exported.",
    .examples = {{"rankscope-export job.rsdb -o job.pftrace",
                  "the whole recording, for ui.perfetto.dev"},
                 {"rankscope-export job.rsdb -o slow.pftrace --from +40s --to +45s --nodes node3",
                  "five seconds of one node"},
                 {"rankscope-analyze report job.rsdb -f json -o job.json && "
                  "rankscope-export job.rsdb -o job.pftrace --report job.json",
                  "the report's verdict marked where it happened"},
                 {"rankscope-export job.rsdb -o - --compression none | protoc --decode_raw",
                  "the trace on standard output"}},
    .man_page = "rankscope-export(1)",
    .more_exit_codes = ""};

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Result<TimePoint> ParseTimePoint(std::string_view text, std::string_view flag) {
  return rs::ParseTimeArg(text, flag);
}

Result<CommandLine> ParseCommandLine(int argc, const char* const* argv) {
  CommandLine cl;
  std::string format, from, to, compression = "deflate";
  std::vector<std::string> nodes;
  std::string output_alias;
  po::options_description opts;
  opts.add_options()                   //
      ("help,h", "show this help")     //
      ("version", "show the version")  //
      ("out,o", po::value<std::string>(&cl.options.output)->value_name("OUT"),
       "trace file to write (required); - writes it to standard output")  //
      ("force", "replace OUT if it exists")                               //
      ("format,f", po::value<std::string>(&format)->value_name("FORMAT"),
       "perfetto (default; .pftrace) or chrome-json (default when OUT ends in .json)")         //
      ("from", po::value<std::string>(&from)->value_name("T"), "first event start to export")  //
      ("to", po::value<std::string>(&to)->value_name("T"), "last event start to export")       //
      ("nodes", po::value<std::vector<std::string>>(&nodes)->composing()->value_name("NODES"),
       "only these nodes (comma-separated, repeatable)")  //
      ("report", po::value<std::string>(&cl.options.report)->value_name("JSON"),
       "mark the verdict and its evidence of this report of INPUT (rankscope-analyze report "
       "INPUT --format json -o JSON) on a track of their own")  //
      ("compression", po::value<std::string>(&compression)->value_name("KIND"),
       "perfetto: deflate (default; packets compressed as Perfetto's own tracer does) or "
       "none (plain packets, e.g. for protoc --decode)")  //
      ("quiet,q", "no progress, summary or final line; errors are still printed");
  po::options_description hidden;
  hidden.add_options()("output", po::value<std::string>(&output_alias),
                       "the old spelling of --out");
  cl.usage = rs::cli::FormatHelp(kHelp, opts);

  ASSIGN_OR_RETURN(rs::cli::ParsedArgs parsed,
                   rs::cli::ParseArgs(rs::cli::ArgsOf(argc, argv), opts, hidden));
  const po::variables_map& vm = parsed.vm;
  if (vm.count("help")) {
    cl.help = true;
    return cl;
  }
  if (vm.count("version")) {
    cl.version = true;
    return cl;
  }
  const std::vector<std::string>& inputs = parsed.positional;
  if (inputs.empty()) return Error("missing INPUT: a .rsdb or .rsb file to export");
  if (inputs.size() != 1) {
    return Error("one INPUT expected, got " + std::to_string(inputs.size()) +
                 " (merge bundles first with rankscope-merge)");
  }
  cl.options.input = inputs[0];
  if (!output_alias.empty()) {
    if (!cl.options.output.empty() && cl.options.output != output_alias) {
      return Error("-o/--out and --output name two files: give one");
    }
    cl.options.output = output_alias;
  }
  if (cl.options.output.empty()) return Error("missing -o OUT: the trace file to write");
  cl.options.force = vm.count("force") > 0;
  cl.quiet = vm.count("quiet") > 0;
  if (format.empty()) {
    format = EndsWith(cl.options.output, ".json") ? "chrome-json" : "perfetto";
  }
  if (format == "perfetto" || format == "protobuf") {
    cl.options.format = Format::kPerfetto;
  } else if (format == "chrome-json" || format == "json") {
    cl.options.format = Format::kChromeJson;
  } else {
    return Error("--format '" + format + "': unknown format (use perfetto or chrome-json)");
  }
  if (compression == "deflate") {
    cl.options.compress = true;
  } else if (compression == "none") {
    cl.options.compress = false;
  } else {
    return Error("--compression '" + compression + "': unknown (use deflate or none)");
  }
  if (!from.empty()) {
    ASSIGN_OR_RETURN(TimePoint t, ParseTimePoint(from, "--from"));
    cl.options.from = t;
  }
  if (!to.empty()) {
    ASSIGN_OR_RETURN(TimePoint t, ParseTimePoint(to, "--to"));
    cl.options.to = t;
  }
  cl.options.nodes = rs::cli::SplitList(nodes);
  if (vm.count("nodes") && cl.options.nodes.empty()) {
    return Error("--nodes: no node names given (use --nodes node1,node3)");
  }
  return cl;
}

}  // namespace rs::exporter
