// The command-line convention the four tools share (README "Command line", each man page):
//   exit status  0 done; 1 error (nothing written); 2 usage (a flag or argument is wrong: one
//                line ending with the hint of WithHelpHint);
//                3 partial (done, with some inputs skipped: each named on stderr);
//                4 `report --fail-on`: the report found what was asked for
//   -o/--out FILE  where the result goes; '-' is standard output (an input '-' is standard
//                input where a tool reads text, e.g. query's SQL). Never an input; an existing
//                file is replaced only with --force; written to a temporary and moved into
//                place when complete (rscore/output.h)
//   --force        replace an existing output file
//   -h/--help      usage, options, EXAMPLES, exit status, laid out alike (cli_help.h)
//   -q/--quiet     no progress or summaries; warnings and errors are always printed
//   progress       only on a terminal; a final line with the elapsed time (WroteLine)
// This header has no dependencies beyond the standard library (the recorder uses it too).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rscore/result.h"

namespace rs::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitPartial = 3;
inline constexpr int kExitFound = 4;

// The exit codes every tool returns, as --help says them; a tool that returns more says those
// after them (HelpText::more_exit_codes), and only those it can return.
inline constexpr const char* kExitStatusHelp = "exit status: 0 done, 1 error, 2 usage error";

// Natural order of names: digit runs compare as numbers (node2 < node10), the rest as text.
bool NaturalLess(std::string_view a, std::string_view b);

// Sorted ranks as runs: {0, 1, 2, 5, 7, 8} -> "0-2, 5, 7-8".
std::string RankRanges(const std::vector<int64_t>& sorted);

// The values of a repeatable comma-separated option (--nodes a,b --nodes c), blanks dropped.
std::vector<std::string> SplitList(const std::vector<std::string>& values);

// '-' as a file name: standard input or output.
inline bool IsStdio(std::string_view path) { return path == "-"; }

// All of standard input (e.g. SQL), at most max_bytes.
rs::Result<std::string> ReadStdin(size_t max_bytes);

// "1.23 s", "850 ms": the elapsed time of a final line.
std::string FormatElapsed(int64_t ns);

// A usage error as every tool ends it: "MESSAGE (see 'COMMAND --help')", COMMAND being the
// tool ("rankscope-merge") or the tool and its subcommand ("rankscope-analyze query").
std::string WithHelpHint(std::string_view message, std::string_view command);

// The final line of every tool (without its "rankscope-xxx: " prefix), unless -q:
// "wrote SHOWN: WHAT in 1.23 s" (SHOWN: a file name or "standard output").
std::string WroteLine(std::string_view shown, std::string_view what, int64_t elapsed_ns);

// What a slow step is doing, on standard error: one line redrawn in place, only when standard
// error is a terminal and not quiet (a log gets nothing); the line is cleared by Done or
// when the object goes.
class Progress {
 public:
  explicit Progress(bool quiet);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void Show(const std::string& line);
  void Done();

 private:
  bool on_;
  bool shown_ = false;
};

}  // namespace rs::cli
