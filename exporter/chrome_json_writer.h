// Writes the trace as Chrome trace-event JSON ({"traceEvents": [...]}) for tools that read
// only that. Timestamps are microseconds rebased to the first event (exact to the
// nanosecond as three decimals: absolute epoch microseconds do not fit a double's
// precision); the base is kept in otherData.base_ns. Slices are complete ("X") events on
// the same overlap-free lanes as the protobuf trace, so they nest; flows are s/t/f events
// bound to the enclosing slice; process_name / thread_name metadata name every pid/tid.
// A host -> device flow is written when its device end comes (only then is it known to end);
// one from an instant is left out (the format binds flow events to slices only).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "exporter/trace_sink.h"

namespace rs::exporter {

class ChromeJsonWriter : public TraceSink {
 public:
  // Writes to `file` (not closed by this object). `source` is recorded in otherData.
  ChromeJsonWriter(std::FILE* file, std::string path_for_errors, std::string source);

  Result<void> Begin(int64_t first_ts, int64_t last_ts) override;
  Result<void> DeclareTrack(const Track& track) override;
  Result<void> Emit(const TraceEvent& event) override;
  Result<void> Finish() override;

  int64_t bytes() const { return bytes_ + static_cast<int64_t>(buf_.size()); }
  int64_t events() const { return events_; }

 private:
  void Time(int64_t ts);  // appends rebased microseconds
  void Duration(int64_t ns);
  void String(std::string_view s);  // appends a quoted, escaped JSON string
  void Open(std::string_view ph, std::string_view name, int64_t ts, const Track& t);
  void Args(const TraceEvent& ev);
  void Flow(FlowRole role, uint64_t flow_id, int64_t ts, const Track& t, bool enqueue = false);
  Result<void> MaybeFlush();

  std::FILE* file_;
  std::string path_, source_;
  std::string buf_;
  std::vector<Track> tracks_;  // by Track::index
  // Host -> device flows begun on a host slice: id -> (ts, track), until the device slice.
  std::map<uint64_t, std::pair<int64_t, uint32_t>> enqueue_starts_;
  int64_t base_ = 0;
  int64_t bytes_ = 0;
  int64_t events_ = 0;
};

}  // namespace rs::exporter
