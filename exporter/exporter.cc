#include "exporter.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "chrome_json_writer.h"
#include "perfetto_writer.h"
#include "rscore/bundle.h"
#include "rscore/time_arg.h"
#include "track_model.h"

namespace rs::exporter {
namespace {

// Removes the temp output unless disarmed.
class TempOutput {
 public:
  explicit TempOutput(std::string path) : path_(std::move(path)) {}
  ~TempOutput() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }
  void Disarm() { path_.clear(); }

 private:
  std::string path_;
};

Result<RowFilter> MakeFilter(Db& db, const ExportOptions& o) {
  RowFilter f;
  if (o.from || o.to) {
    ASSIGN_OR_RETURN(const int64_t base, RecordingStartNs(db));
    if (o.from) f.from_ns = o.from->Resolve(base);
    if (o.to) f.to_ns = o.to->Resolve(base);
    if (f.from_ns > f.to_ns) {
      return Error("--from is after --to (" + std::to_string(f.from_ns) + " > " +
                   std::to_string(f.to_ns) + " ns): nothing to export");
    }
  }
  if (!o.nodes.empty()) {
    ASSIGN_OR_RETURN(std::vector<std::string> known, ListNodes(db));
    for (const std::string& n : o.nodes) {
      bool found = false;
      for (const std::string& k : known) found = found || k == n;
      if (!found) {
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        return Error("--nodes: node '" + n + "' is not in " + o.input +
                     " (it has: " + (list.empty() ? "no nodes" : list) + ")");
      }
    }
    f.nodes = o.nodes;
  }
  return f;
}

// "2026-11-25T11:38:01.500000000Z (+3600.000 s)": a time and its offset from `base`.
std::string TimeAndOffset(int64_t ns, int64_t base) {
  char offset[48];
  std::snprintf(offset, sizeof offset, "%+.3f s", static_cast<double>(ns - base) * 1e-9);
  return rs::FormatUtc(ns) + " (" + offset + ")";
}

// The error for a window that holds no event: the window, and what the input holds.
Result<void> EmptyWindow(Db& db, const ExportOptions& o, const RowFilter& f) {
  ASSIGN_OR_RETURN(auto span, EventSpan(db));
  ASSIGN_OR_RETURN(const int64_t base, RecordingStartNs(db));
  std::string window;
  if (o.from) window += "--from " + TimeAndOffset(f.from_ns, base);
  if (o.to)
    window += std::string(window.empty() ? "" : " ") + "--to " + TimeAndOffset(f.to_ns, base);
  if (!o.nodes.empty()) {
    window += std::string(window.empty() ? "" : " ") + "--nodes ";
    for (size_t i = 0; i < o.nodes.size(); ++i) window += (i ? "," : "") + o.nodes[i];
  }
  std::string held = span
                         ? "its events run from " + TimeAndOffset(span->first, base) + " to " +
                               TimeAndOffset(span->second, base) + " (offsets from the recording's start)"
                         : "it holds no events at all";
  return Error(o.input + ": no event in the window " + window + ": " + held + "; nothing written");
}

Result<void> RunTimeline(Db& db, const std::string& source, const RowFilter& filter,
                         const InputSummary& summary, TraceSink& sink, ExportResult& result) {
  ASSIGN_OR_RETURN(ProcessMap processes, ReadProcesses(db));
  ASSIGN_OR_RETURN(std::vector<std::string> nodes, ListNodes(db));
  ASSIGN_OR_RETURN(BlockDeviceNames devices, ReadBlockDevices(db));
  ASSIGN_OR_RETURN(EventReader reader, EventReader::Open(db, filter));
  TrackModel tracks(std::move(processes), nodes, std::move(devices));
  RETURN_IF_ERROR(sink.Begin(summary.first_ts, summary.last_ts));
  Timeline timeline(tracks, sink, summary);
  RowPipeline rows(std::move(reader), source);
  RETURN_IF_ERROR(timeline.Run(rows));
  RETURN_IF_ERROR(sink.Finish());
  result.stats = timeline.stats();
  result.tracks = static_cast<int64_t>(tracks.tracks().size());
  return Ok();
}

}  // namespace

Result<ExportResult> Export(const ExportOptions& o) {
  // Every page the export needs is read anyway, and SQLite reports corruption on the
  // read that meets it (named with the input below), so skip the upfront quick_check.
  auto opened = OpenRankscopeFile(o.input, /*check_integrity=*/false);
  if (!opened.ok()) return opened.error();
  Db& db = opened->db();
  // Reads follow the timestamp index around the table: map the file instead of copying
  // pages through read(2). Best effort (an error only costs speed).
  (void)db.Exec("PRAGMA mmap_size = 1073741824");
  ASSIGN_OR_RETURN(RowFilter filter, MakeFilter(db, o));
  ExportResult result;
  auto summary = Summarize(db, filter);
  if (!summary.ok()) return summary.error().Wrap(o.input);
  result.summary = std::move(summary).value();
  ASSIGN_OR_RETURN(result.recording_start_ns, RecordingStartNs(db));
  // An empty window is a mistake (a time past the end, a node idle then), not a trace to open.
  if (result.summary.rows == 0 && (o.from || o.to || !o.nodes.empty())) {
    RETURN_IF_ERROR(EmptyWindow(db, o, filter));
  }

  TempOutput tmp(o.output + ".tmp." + std::to_string(::getpid()));
  if (o.format == Format::kPerfetto) {
    int fd = ::open(tmp.path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      return Error(o.output + ": cannot create: " + std::strerror(errno) +
                   " (check the directory exists and is writable)");
    }
    Result<void> r = Ok();
    {
      PerfettoWriter writer(fd, o.output, o.compress);
      r = RunTimeline(db, o.input, filter, result.summary, writer, result);
      result.packets = writer.packets();
      result.bytes = writer.bytes();
    }
    if (::close(fd) != 0 && r.ok()) {
      r = Error(o.output + ": write failed: " + std::strerror(errno));
    }
    if (!r.ok()) return r.error();
  } else {
    std::FILE* f = std::fopen(tmp.path().c_str(), "we");
    if (!f) {
      return Error(o.output + ": cannot create: " + std::strerror(errno) +
                   " (check the directory exists and is writable)");
    }
    Result<void> r = Ok();
    {
      ChromeJsonWriter writer(f, o.output, o.input.substr(o.input.rfind('/') + 1));
      r = RunTimeline(db, o.input, filter, result.summary, writer, result);
      result.bytes = writer.bytes();
    }
    if (std::fclose(f) != 0 && r.ok()) {
      r = Error(o.output + ": write failed: " + std::strerror(errno));
    }
    if (!r.ok()) return r.error();
  }
  if (::rename(tmp.path().c_str(), o.output.c_str()) != 0) {
    return Error(o.output +
                 ": cannot rename the finished trace into place: " + std::strerror(errno));
  }
  tmp.Disarm();
  return result;
}

}  // namespace rs::exporter
