// --help of the workstation tools, laid out alike (rscore/cli.h has the convention):
//
//   usage: rankscope-merge -o OUT.rsdb INPUT...
//
//   <about: what the tool does, what INPUT is>
//
//   options:
//     -o, --out FILE        merged database to write ...
//         --strict          ...
//
//   examples:
//     rankscope-merge -o job.rsdb bundles/
//         every node's bundle of a directory
//
//   exit status: ...
//   See rankscope-merge(1).
//
// Options come from Boost.Program_options' description (value names from value_name()).
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <string>
#include <utility>
#include <vector>

#include "rscore/result.h"

namespace rs::cli {

struct HelpText {
  std::string usage;  // one or more "usage:" lines, without the word
  std::string about;  // paragraphs
  std::vector<std::pair<std::string, std::string>> examples;  // command, what it does
  std::string man_page;                                       // "rankscope-merge(1)"
  // The exit codes beyond 0, 1 and 2 that this command can return: ", 3 partial (...)".
  std::string more_exit_codes;
};

std::string FormatHelp(const HelpText& text,
                       const boost::program_options::options_description& options);

// The workstation tools' command lines: `visible` options (those --help lists), `hidden` ones
// (old spellings) and the rest as positional arguments, in command-line order, into
// `positional`. args[0] is the first argument (not the program). A Boost error comes back as
// an error (the caller prints it as a usage error, rs::cli::WithHelpHint).
struct ParsedArgs {
  boost::program_options::variables_map vm;
  std::vector<std::string> positional;
};
Result<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                             const boost::program_options::options_description& visible,
                             const boost::program_options::options_description& hidden);
// argc/argv as main() gets them (argv[0] is skipped).
std::vector<std::string> ArgsOf(int argc, const char* const* argv);

}  // namespace rs::cli
