#include "merger/options.h"

#include <boost/program_options.hpp>

#include "rscore/cli.h"
#include "rscore/cli_help.h"

namespace rs::merge {

namespace po = boost::program_options;

rs::Result<CommandLine> ParseCommandLine(int argc, const char* const* argv) {
  CommandLine cl;
  po::options_description opts;
  opts.add_options()                    //
      ("help,h", "show this help")      //
      ("version", "print the version")  //
      ("out,o", po::value<std::string>(&cl.merge.out_path)->value_name("FILE"),
       "merged database to write (atomically, mode 0600); - writes it to standard output")  //
      ("force", "replace OUT (and OUT.zst) if it exists")                                   //
      ("strict",
       "abort without writing anything if any input fails validation or shares no "
       "communicator and no time with the others")                              //
      ("bundle", "also write a zstd-compressed copy of the result to OUT.zst")  //
      ("reference", po::value<std::string>(&cl.merge.reference_node)->value_name("NODE"),
       "node whose clock the others are aligned to (default: the node in most rendezvous)")  //
      ("progress", "show progress as plain lines even when stderr is not a terminal")        //
      ("quiet,q",
       "no progress, per-table counts or final line; warnings and errors are still printed");
  cl.help_text = rs::cli::FormatHelp(
      {.usage = "rankscope-merge -o OUT.rsdb INPUT...",
       .about = "Validates node bundles, aligns their clocks and merges them into one SQLite\n"
                "database. INPUT is a node bundle (NODE.rsb), a PyTorch Flight Recorder dump\n"
                "(nccl_trace_rank_N, pickle or JSON; read without executing anything) or a\n"
                "directory of them; a bad input is skipped with its reason (exit 3), or aborts\n"
                "the merge with --strict.",
       .examples = {{"rankscope-merge -o job.rsdb bundles/",
                     "merge every node's bundle of a directory"},
                    {"rankscope-merge --strict -o job.rsdb node*.rsb",
                     "refuse to write anything if one bundle is bad or from another job"},
                    {"rankscope-merge -o job.rsdb bundles/ ~/.cache/fr_trace/",
                     "the recording and the ranks' Flight Recorder dumps together"},
                    {"rankscope-merge -q -o - bundles/ | sqlite3 /dev/stdin .tables",
                     "write the merged database to standard output"}},
       .man_page = "rankscope-merge(1)",
       .more_exit_codes = ", 3 partial (inputs skipped)"},
      opts);
  ASSIGN_OR_RETURN(rs::cli::ParsedArgs parsed,
                   rs::cli::ParseArgs(rs::cli::ArgsOf(argc, argv), opts, {}));
  const po::variables_map& vm = parsed.vm;
  cl.merge.inputs = std::move(parsed.positional);
  cl.help = vm.count("help") > 0;
  cl.version = vm.count("version") > 0;
  if (cl.help || cl.version) return cl;
  cl.merge.strict = vm.count("strict") > 0;
  cl.merge.force = vm.count("force") > 0;
  cl.quiet = vm.count("quiet") > 0;
  cl.progress_forced = vm.count("progress") > 0;
  if (cl.merge.out_path.empty()) {
    return rs::Error("-o/--out is required: where to write the merged database (e.g. -o run.rsdb)");
  }
  if (cl.merge.inputs.empty()) {
    return rs::Error("no inputs: give node bundles (NODE.rsb) or a directory holding them");
  }
  if (vm.count("bundle")) {
    if (rs::cli::IsStdio(cl.merge.out_path)) {
      return rs::Error("--bundle needs a file name for -o (OUT.zst is written beside it)");
    }
    cl.merge.bundle_path = cl.merge.out_path + ".zst";
  }
  return cl;
}

}  // namespace rs::merge
