// Command-line options of rankscope-merge (see man/rankscope-merge.1).
#pragma once

#include <string>
#include <vector>

#include "merger/merge.h"
#include "rscore/result.h"

namespace rs::merge {

struct CommandLine {
  MergeOptions merge;
  bool help = false;
  bool version = false;
  bool quiet = false;
  bool progress_forced = false;  // --progress: plain lines also when stderr is no terminal
  std::string help_text;
};

// Parses argv with Boost.Program_options; its exceptions become an Error naming the flag.
rs::Result<CommandLine> ParseCommandLine(int argc, const char* const* argv);

}  // namespace rs::merge
