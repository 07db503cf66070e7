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
#include <string>
#include <utility>
#include <vector>

namespace rs::cli {

struct HelpText {
  std::string usage;  // one or more "usage:" lines, without the word
  std::string about;  // paragraphs
  std::vector<std::pair<std::string, std::string>> examples;  // command, what it does
  std::string man_page;                                        // "rankscope-merge(1)"
};

std::string FormatHelp(const HelpText& text,
                       const boost::program_options::options_description& options);

}  // namespace rs::cli
