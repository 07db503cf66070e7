#include "exporter/exporter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "exporter/chrome_json_writer.h"
#include "exporter/perfetto_writer.h"
#include "exporter/track_model.h"
#include "exporter/verdict_marks.h"
#include "rscore/bundle.h"
#include "rscore/output.h"
#include "rscore/schema.h"
#include "rscore/time_arg.h"

namespace rs::exporter {
namespace {

Result<RowWindow> MakeFilter(Db& db, const ExportOptions& o) {
  RowWindow f;
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
Result<void> EmptyWindow(Db& db, const ExportOptions& o, const RowWindow& f) {
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
  std::string held = span ? "its events run from " + TimeAndOffset(span->first, base) + " to " +
                                TimeAndOffset(span->second, base) +
                                " (offsets from the recording's start)"
                          : "it holds no events at all";
  return Error(o.input + ": no event in the window " + window + ": " + held + "; nothing written");
}

// A database of Flight Recorder dumps without a single entry, and no recorded event: its trace
// would be empty, and an empty trace with exit 0 reads as "nothing happened".
Result<void> RefuseEmptyDumps(Db& db, const std::string& input) {
  ASSIGN_OR_RETURN(const bool has, rs::HasTable(db, "fr_dumps"));
  if (!has) return Ok();
  ASSIGN_OR_RETURN(Statement st, db.Prepare("SELECT COUNT(*) FROM fr_dumps"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  const int64_t dumps = row ? st.Int(0) : 0;
  if (dumps == 0) return Ok();
  return Error(input + ": nothing to export: its " + std::to_string(dumps) +
               " Flight Recorder dump(s) hold no entries and it has no recorded events (the "
               "dumps' groups and states: rankscope-analyze query " +
               input + " 'SELECT * FROM fr_dumps'); nothing written");
}

Result<void> RunTimeline(Db& db, const std::string& source, const RowWindow& filter,
                         const InputSummary& summary, std::vector<VerdictMark> marks,
                         TraceSink& sink, ExportResult& result) {
  ASSIGN_OR_RETURN(ProcessMap processes, ReadProcesses(db));
  ASSIGN_OR_RETURN(std::vector<std::string> nodes, ListNodes(db));
  ASSIGN_OR_RETURN(BlockDeviceNames devices, ReadBlockDevices(db));
  ASSIGN_OR_RETURN(EventReader reader, EventReader::Open(db, filter));
  TrackModel tracks(std::move(processes), nodes, std::move(devices));
  RETURN_IF_ERROR(sink.Begin(summary.first_ts, summary.last_ts));
  Timeline timeline(tracks, sink, summary);
  timeline.AddMarks(std::move(marks));
  RowPipeline rows(std::move(reader), source);
  RETURN_IF_ERROR(timeline.Run(rows));
  RETURN_IF_ERROR(sink.Finish());
  result.stats = timeline.stats();
  result.tracks = static_cast<int64_t>(tracks.tracks().size());
  std::set<std::pair<uint64_t, std::string>> merged;  // (parent, merge key)
  for (const Track& t : tracks.tracks()) {
    if (t.merge_key.empty() || merged.insert({t.parent_uuid, t.merge_key}).second) {
      ++result.shown_tracks;
    }
  }
  return Ok();
}

}  // namespace

std::string UiSizeWarning(const std::string& input, int64_t rows, int64_t first_ns,
                          int64_t last_ns) {
  int64_t limit = kUiMemoryBytes;
  if (const char* env = std::getenv("RANKSCOPE_EXPORT_UI_LIMIT_BYTES")) {
    limit = std::max<int64_t>(1, std::atoll(env));
  }
  const int64_t fit_rows = limit / (kProtoBytesPerRow * kUiInflation);
  if (rows <= fit_rows) return "";
  const double mb = static_cast<double>(rows) * kProtoBytesPerRow / 1e6;
  const double span_s = static_cast<double>(std::max<int64_t>(0, last_ns - first_ns)) / 1e9;
  const double fit_s = span_s * static_cast<double>(fit_rows) / static_cast<double>(rows);
  char text[768];
  std::snprintf(text, sizeof(text),
                "%s: %lld rows make a trace of about %.0f MB (uncompressed), and ui.perfetto.dev "
                "needs 2-4 times that in the browser's memory, typically 2 GB at most: it may "
                "not open there. Narrow it with --nodes (the nodes the report names) or "
                "--from/--to (about %.3g s of the %.3g s exported fit), or open it through "
                "Perfetto's trace_processor --httpd, which the UI uses instead of the "
                "browser's memory",
                input.c_str(), static_cast<long long>(rows), mb, fit_s, span_s);
  return text;
}

Result<ExportResult> Export(const ExportOptions& o) {
  ASSIGN_OR_RETURN(const OutputTarget target, CheckOutput(o.output, o.force, {o.input}));
  // Every page the export needs is read anyway, and SQLite reports corruption on the
  // read that meets it (named with the input below), so skip the upfront quick_check.
  auto opened = OpenRankscopeFile(o.input, /*check_integrity=*/false);
  if (!opened.ok()) return opened.error();
  Db& db = opened->db();
  // Reads follow the timestamp index around the table: map the file instead of copying
  // pages through read(2). Best effort (an error only costs speed).
  (void)db.Exec("PRAGMA mmap_size = 1073741824");
  ASSIGN_OR_RETURN(RowWindow filter, MakeFilter(db, o));
  ExportResult result;
  auto summary = Summarize(db, filter);
  if (!summary.ok()) return summary.error().Wrap(o.input);
  result.summary = std::move(summary).value();
  ASSIGN_OR_RETURN(result.recording_start_ns, RecordingStartNs(db));
  // An empty window is a mistake (a time past the end, a node idle then), not a trace to open.
  if (result.summary.rows == 0 && (o.from || o.to || !o.nodes.empty())) {
    RETURN_IF_ERROR(EmptyWindow(db, o, filter));
  }
  if (result.summary.rows == 0) RETURN_IF_ERROR(RefuseEmptyDumps(db, o.input));
  if (o.warn) {
    const std::string w = UiSizeWarning(o.input, result.summary.rows, result.summary.first_ts,
                                        result.summary.last_ts);
    if (!w.empty()) o.warn(w);
  }
  std::vector<VerdictMark> marks;
  if (!o.report.empty()) {
    ASSIGN_OR_RETURN(auto span, EventSpan(db));
    ASSIGN_OR_RETURN(VerdictMarks v,
                     ReadVerdictMarks(o.report, span ? span->first : 0, span ? span->second : 0));
    for (VerdictMark& m : v.marks) {
      const bool kept = m.node.empty() || o.nodes.empty() ||
                        std::find(o.nodes.begin(), o.nodes.end(), m.node) != o.nodes.end();
      if (kept) marks.push_back(std::move(m));
    }
  }

  // Written without a name beside the output (or in $TMPDIR for standard output and
  // streams), and given its name only once complete (rscore/output.h).
  ASSIGN_OR_RETURN(OutputFile out, OutputFile::Create(target));
  if (o.format == Format::kPerfetto) {
    PerfettoWriter writer(out.fd(), out.shown(), o.compress);
    Result<void> r =
        RunTimeline(db, o.input, filter, result.summary, std::move(marks), writer, result);
    result.packets = writer.packets();
    result.bytes = writer.bytes();
    if (!r.ok()) return r.error();
  } else {
    const int dup_fd = ::fcntl(out.fd(), F_DUPFD_CLOEXEC, 0);
    std::FILE* f = dup_fd < 0 ? nullptr : ::fdopen(dup_fd, "w");
    if (!f) {
      if (dup_fd >= 0) ::close(dup_fd);
      return Error(out.shown() + ": cannot write: " + std::strerror(errno));
    }
    Result<void> r = Ok();
    {
      ChromeJsonWriter writer(f, out.shown(), o.input.substr(o.input.rfind('/') + 1));
      r = RunTimeline(db, o.input, filter, result.summary, std::move(marks), writer, result);
      result.bytes = writer.bytes();
    }
    if (std::fclose(f) != 0 && r.ok()) r = WriteError(out.shown(), errno);
    if (!r.ok()) return r.error();
  }
  RETURN_IF_ERROR(out.Commit());
  return result;
}

}  // namespace rs::exporter
