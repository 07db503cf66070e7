// Command line of rankscope-export (see man/rankscope-export.1).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rscore/result.h"

namespace rs::exporter {

enum class Format { kPerfetto, kChromeJson };

// A --from / --to value: absolute wall-clock nanoseconds ("1760000000123456789") or an
// offset from the first event of the input ("+1.5s", "+250ms", "+0").
struct TimePoint {
  bool relative = false;
  int64_t ns = 0;
  // The absolute time, given the input's first event timestamp.
  int64_t Resolve(int64_t first_event_ns) const { return relative ? first_event_ns + ns : ns; }
};

Result<TimePoint> ParseTimePoint(std::string_view text, std::string_view flag);

struct ExportOptions {
  std::string input;
  std::string output;
  Format format = Format::kPerfetto;
  std::optional<TimePoint> from, to;
  std::vector<std::string> nodes;  // empty: every node
  bool compress = true;            // perfetto: deflate packets (TracePacket.compressed_packets)
};

struct CommandLine {
  bool help = false;
  bool version = false;
  std::string usage;  // the --help text
  ExportOptions options;
};

// Parses argv. --format defaults from the output name (.json -> chrome-json, else perfetto).
Result<CommandLine> ParseCommandLine(int argc, const char* const* argv);

}  // namespace rs::exporter
