#include "options.h"

#include <boost/program_options.hpp>
#include <sstream>

namespace merge {

namespace po = boost::program_options;

rs::Result<CommandLine> ParseCommandLine(int argc, const char* const* argv) {
  CommandLine cl;
  po::options_description opts(
      "usage: rankscope-merge -o OUT.rsdb INPUT...\n"
      "INPUT is a node bundle (NODE.rsb) or a directory of them.\n\noptions");
  opts.add_options()("help,h", "show this help")("version", "print the version")(
      "out,o", po::value<std::string>(&cl.merge.out_path),
      "merged database to write (atomically, mode 0600)")(
      "strict", "abort without writing anything if any input fails validation")(
      "bundle", "also write a zstd-compressed copy of the result to OUT.zst")(
      "reference", po::value<std::string>(&cl.merge.reference_node),
      "node whose clock the others are aligned to (default: the node in most rendezvous)")(
      "progress", "show progress even when stderr is not a terminal")(
      "quiet,q", "print only problems, not the per-table counts");
  po::options_description hidden;
  hidden.add_options()("input", po::value<std::vector<std::string>>(&cl.merge.inputs));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return rs::Error(std::string(e.what()) + " (see rankscope-merge --help)");
  }
  std::ostringstream help;
  help << opts
       << "\nexit status: 0 all inputs merged, 1 error (nothing written), 2 merged with some\n"
          "inputs skipped (each reported with its reason). See rankscope-merge(1).\n";
  cl.help_text = help.str();
  cl.help = vm.count("help") > 0;
  cl.version = vm.count("version") > 0;
  if (cl.help || cl.version) return cl;
  cl.merge.strict = vm.count("strict") > 0;
  cl.quiet = vm.count("quiet") > 0;
  cl.merge.progress = vm.count("progress") > 0;
  if (cl.merge.out_path.empty()) {
    return rs::Error("-o/--out is required: where to write the merged database (e.g. -o run.rsdb)");
  }
  if (cl.merge.inputs.empty()) {
    return rs::Error("no inputs: give node bundles (NODE.rsb) or a directory holding them");
  }
  if (vm.count("bundle")) cl.merge.bundle_path = cl.merge.out_path + ".zst";
  return cl;
}

}  // namespace merge
