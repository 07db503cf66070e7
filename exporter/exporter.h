// rankscope-export's one operation: open the input, read its rows in order, write the
// trace. The output appears atomically (written to an unnamed file beside it, linked into
// place when complete: rscore/output.h); it is never the input, and replaces an existing file
// only with ExportOptions::force.
#pragma once

#include <cstdint>

#include "exporter/event_reader.h"
#include "exporter/export_options.h"
#include "exporter/timeline.h"

namespace rs::exporter {

struct ExportResult {
  InputSummary summary;
  TimelineStats stats;
  int64_t tracks = 0;
  int64_t shown_tracks = 0;        // as the UI shows them: tracks of one merge key counted once
  int64_t bytes = 0;               // size of the written file
  int64_t packets = 0;             // protobuf only: TracePackets written
  int64_t recording_start_ns = 0;  // the zero of --from/--to offsets (RecordingStartNs)
};

// ui.perfetto.dev processes a trace in the browser's memory: "the exact memory limit can vary
// by browser, architecture, and OS however 2gb is typical", and the trace's representation
// there is "normally larger than the binary size of that trace ... 2-4x for uncompressed proto
// traces" (Perfetto's docs, Visualising large traces). Our traces' uncompressed protobuf
// measured 78 bytes per exported row (a 3-node test-bed run: 228,972 rows, 17,899,712 bytes
// with --compression none; Chrome JSON 228 bytes per row). A trace is warned about when its
// rows at that size, times the worst inflation, pass the typical limit; the environment
// variable RANKSCOPE_EXPORT_UI_LIMIT_BYTES replaces the limit (tests).
inline constexpr int64_t kUiMemoryBytes = int64_t{2} << 30;
inline constexpr int64_t kUiInflation = 4;
inline constexpr int64_t kProtoBytesPerRow = 78;

// The warning for `rows` rows spanning [first_ns, last_ns] read from `input`; empty when the
// trace should open.
std::string UiSizeWarning(const std::string& input, int64_t rows, int64_t first_ns,
                          int64_t last_ns);

Result<ExportResult> Export(const ExportOptions& options);

}  // namespace rs::exporter
