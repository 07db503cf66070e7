// rankscope-export's one operation: open the input, read its rows in order, write the
// trace. The output appears atomically (written to an unnamed file beside it, linked into
// place when complete: rscore/output.h); it is never the input, and replaces an existing file
// only with ExportOptions::force.
#pragma once

#include <cstdint>

#include "event_reader.h"
#include "export_options.h"
#include "timeline.h"

namespace rs::exporter {

struct ExportResult {
  InputSummary summary;
  TimelineStats stats;
  int64_t tracks = 0;
  int64_t shown_tracks = 0;  // as the UI shows them: tracks of one merge key counted once
  int64_t bytes = 0;    // size of the written file
  int64_t packets = 0;  // protobuf only: TracePackets written
  int64_t recording_start_ns = 0;  // the zero of --from/--to offsets (RecordingStartNs)
};

Result<ExportResult> Export(const ExportOptions& options);

}  // namespace rs::exporter
