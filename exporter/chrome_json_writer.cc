#include "exporter/chrome_json_writer.h"

#include "rscore/json.h"
#include "rscore/output.h"

#include <cerrno>
#include <cinttypes>
#include <cstring>

namespace rs::exporter {
namespace {

constexpr size_t kFlushBytes = 1 << 20;

}  // namespace

ChromeJsonWriter::ChromeJsonWriter(std::FILE* file, std::string path_for_errors, std::string source)
    : file_(file), path_(std::move(path_for_errors)), source_(std::move(source)) {}

void ChromeJsonWriter::Time(int64_t ts) { Duration(ts - base_); }

void ChromeJsonWriter::Duration(int64_t ns) {
  char b[48];
  const char* sign = ns < 0 ? "-" : "";
  uint64_t a = ns < 0 ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  std::snprintf(b, sizeof b, "%s%" PRIu64 ".%03" PRIu64, sign, a / 1000, a % 1000);
  buf_ += b;
}

void ChromeJsonWriter::String(std::string_view s) { buf_ += rs::JsonWriter::Quote(s); }

Result<void> ChromeJsonWriter::MaybeFlush() {
  if (buf_.size() < kFlushBytes) return Ok();
  if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) {
    return WriteError(path_, errno);
  }
  bytes_ += static_cast<int64_t>(buf_.size());
  buf_.clear();
  return Ok();
}

Result<void> ChromeJsonWriter::Begin(int64_t first_ts, int64_t last_ts) {
  base_ = first_ts;
  buf_ += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"rankscope-export\",";
  buf_ += "\"source\":";
  String(source_);
  buf_ += ",\"base_ns\":\"" + std::to_string(first_ts) + "\",\"end_ns\":\"" +
          std::to_string(last_ts) + "\"},\n\"traceEvents\":[\n";
  return Ok();
}

void ChromeJsonWriter::Open(std::string_view ph, std::string_view name, int64_t ts,
                            const Track& t) {
  if (events_++ > 0) buf_ += ",\n";
  buf_ += "{\"ph\":\"";
  buf_ += ph;
  buf_ += "\",\"name\":";
  String(name);
  buf_ += ",\"pid\":" + std::to_string(t.pid) + ",\"tid\":" + std::to_string(t.tid);
  buf_ += ",\"ts\":";
  if (ts == INT64_MIN) {
    buf_ += '0';  // metadata
  } else {
    Time(ts);
  }
}

Result<void> ChromeJsonWriter::DeclareTrack(const Track& t) {
  if (tracks_.size() <= t.index) tracks_.resize(t.index + 1);
  tracks_[t.index] = t;
  switch (t.kind) {
    case TrackKind::kNode:
    case TrackKind::kProcess:
      Open("M", "process_name", INT64_MIN, t);
      buf_ += ",\"args\":{\"name\":";
      String(t.name);
      buf_ += "}}";
      // Nodes in natural order, each followed by its ranks in order.
      Open("M", "process_sort_index", INT64_MIN, t);
      buf_ += ",\"args\":{\"sort_index\":" + std::to_string(t.sort_index) + "}}";
      break;
    case TrackKind::kThread:
    case TrackKind::kSlices:
      Open("M", "thread_name", INT64_MIN, t);
      buf_ += ",\"args\":{\"name\":";
      String(t.name);
      buf_ += "}}";
      Open("M", "thread_sort_index", INT64_MIN, t);
      buf_ += ",\"args\":{\"sort_index\":" + std::to_string(t.sort_index) + "}}";
      break;
    case TrackKind::kCounter:
      break;  // counters are named by their "C" events
  }
  return MaybeFlush();
}

void ChromeJsonWriter::Args(const TraceEvent& ev) {
  buf_ += ",\"args\":{";
  bool first = true;
  for (const Annotation& a : ev.args) {
    if (!first) buf_ += ',';
    first = false;
    String(a.name);
    buf_ += ':';
    switch (a.kind) {
      case Annotation::Kind::kInt:
        buf_ += std::to_string(a.i);
        break;
      case Annotation::Kind::kUint:
        buf_ += std::to_string(a.u);
        break;
      case Annotation::Kind::kString:
        String(a.s);
        break;
      case Annotation::Kind::kBool:
        buf_ += a.b ? "true" : "false";
        break;
    }
  }
  buf_ += '}';
}

Result<void> ChromeJsonWriter::Emit(const TraceEvent& ev) {
  const Track& t = tracks_[ev.track];
  switch (ev.type) {
    case EventType::kSliceEnd:
      return Ok();  // slices are written whole at their begin
    case EventType::kCounter:
      Open("C", t.name, ev.ts, t);
      buf_ += ",\"args\":{\"value\":" + std::to_string(ev.counter_value) + "}}";
      return MaybeFlush();
    case EventType::kInstant:
      Open("i", ev.name, ev.ts, t);
      buf_ += ",\"s\":\"t\",\"cat\":";
      String(ev.category);
      Args(ev);
      buf_ += '}';
      return MaybeFlush();
    case EventType::kSliceBegin:
      break;
  }
  Open("X", ev.name, ev.ts, t);
  buf_ += ",\"dur\":";
  Duration(ev.end_ts - ev.ts);
  buf_ += ",\"cat\":";
  String(ev.category);
  Args(ev);
  buf_ += '}';
  for (const FlowLink& f : ev.flows) {
    if (f.kind == FlowKind::kCollective) {
      Flow(f.role, f.id, ev.ts, t);
      continue;
    }
    // A host -> device flow is written once both ends are known: its start (a host call whose
    // operation never ran on the GPU has none) waits for its end.
    if (f.role == FlowRole::kStart) {
      enqueue_starts_[f.id] = {ev.ts, ev.track};
    } else if (auto it = enqueue_starts_.find(f.id); it != enqueue_starts_.end()) {
      Flow(FlowRole::kStart, f.id, it->second.first, tracks_[it->second.second], /*enqueue=*/true);
      Flow(FlowRole::kEnd, f.id, ev.ts, t, /*enqueue=*/true);
      enqueue_starts_.erase(it);
    }
  }
  return MaybeFlush();
}

void ChromeJsonWriter::Flow(FlowRole role, uint64_t flow_id, int64_t ts, const Track& t,
                            bool enqueue) {
  const char* ph = role == FlowRole::kStart ? "s" : role == FlowRole::kStep ? "t" : "f";
  Open(ph, enqueue ? "enqueue" : "collective", ts, t);
  char id[32];
  std::snprintf(id, sizeof id, "0x%016" PRIx64, flow_id);
  buf_ += enqueue ? ",\"cat\":\"gpu.flow\",\"id\":\"" : ",\"cat\":\"nccl.flow\",\"id\":\"";
  buf_ += id;
  buf_ += "\",\"bp\":\"e\"}";
}

Result<void> ChromeJsonWriter::Finish() {
  buf_ += "\n]}\n";
  if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size() || std::fflush(file_) != 0) {
    return WriteError(path_, errno);
  }
  bytes_ += static_cast<int64_t>(buf_.size());
  buf_.clear();
  return Ok();
}

}  // namespace rs::exporter
