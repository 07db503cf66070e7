// Command line of rankscope-export (see man/rankscope-export.1).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rscore/result.h"
#include "rscore/time_arg.h"

namespace rs::exporter {

enum class Format { kPerfetto, kChromeJson };

// A --from / --to value (rscore/time_arg.h): an ISO 8601 UTC time, wall-clock nanoseconds, or
// an offset from the recording's start ("+1.5s", "+250ms", "+0"), the zero of every tool.
using TimePoint = rs::TimeArg;

Result<TimePoint> ParseTimePoint(std::string_view text, std::string_view flag);

struct ExportOptions {
  std::string input;
  std::string output;  // '-': standard output
  bool force = false;  // replace an existing output file
  Format format = Format::kPerfetto;
  std::optional<TimePoint> from, to;
  std::vector<std::string> nodes;  // empty: every node
  bool compress = true;            // perfetto: deflate packets (TracePacket.compressed_packets)
  // rankscope-analyze report --format json of the input: its verdict and evidence marked on a
  // track of their own (verdict_marks.h); '' for none.
  std::string report;
  // Told, before the trace is written, that it may be too large for ui.perfetto.dev
  // (exporter.h, UiSizeWarning); unset: not told.
  std::function<void(const std::string&)> warn;
};

struct CommandLine {
  bool help = false;
  bool version = false;
  bool quiet = false;  // -q: no progress, summary or final line
  std::string usage;   // the --help text
  ExportOptions options;
};

// Parses argv. --format defaults from the output name (.json -> chrome-json, else perfetto).
Result<CommandLine> ParseCommandLine(int argc, const char* const* argv);

}  // namespace rs::exporter
