// export_trace(from, to, nodes): a Perfetto trace of a window, written by rankscope-export's
// library to a new file in the server's --trace-dir; the result gives its path.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "analyzer/mcp/output_schema.h"
#include "analyzer/mcp/tool_bounds.h"
#include "analyzer/mcp/tools.h"
#include "exporter/exporter.h"
#include "rscore/time_arg.h"

namespace rs::analyzer::mcp {
namespace {

constexpr int kNameTries = 100;
// What one server writes to --trace-dir at most: an assistant that calls export_trace in a
// loop (300 calls wrote 405 MB) fills the directory with nothing a person will open.
constexpr int kMaxTraces = 20;
constexpr int64_t kMaxTraceBytes = int64_t{1} << 30;

Json Schema() {
  using namespace schema;
  return Result({{"path", String("the trace file (open it in https://ui.perfetto.dev)")},
                 {"bytes", Integer()},
                 {"packets", Integer("TracePackets written")},
                 {"tracks", Integer()},
                 {"events", Integer("slices (begin and end), instants and counter samples")},
                 {"from_utc", String("the window's start")},
                 {"to_utc", String()},
                 {"nodes", ArrayOf(String(), "the nodes exported (empty: all)")},
                 {"verdict_marks", Integer("the report's verdict and evidence marked on the "
                                           "trace's 'rankscope verdict' track")}});
}

// trace-dir/rankscope-20261125T114901Z-4242-1.pftrace: the UTC time, the server's pid and a
// count; the exporter never replaces a file, so a name already taken is passed over.
std::string TraceName(const std::string& dir, int n) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  return dir + "/rankscope-" + stamp + "-" + std::to_string(::getpid()) + "-" + std::to_string(n) +
         ".pftrace";
}

// The report's JSON in a file of its own under $TMPDIR, removed when this goes.
class TempReport {
 public:
  TempReport() = default;
  TempReport(const TempReport&) = delete;
  TempReport& operator=(const TempReport&) = delete;
  ~TempReport() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  rs::Result<std::string> Write(const Json& report) {
    const char* tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/rankscope-report-XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd < 0) return rs::Error(path + ": cannot create a file for the report's verdict");
    path_ = path;
    const std::string text = report.dump();
    const bool wrote = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!wrote) return rs::Error(path + ": cannot write the report's verdict");
    return path;
  }

 private:
  std::string path_;
};

rs::Result<ToolOutput> Run(Recording& rec, const Args& args, const ToolContext& ctx) {
  rs::exporter::ExportOptions o;
  o.input = rec.path();
  o.format = rs::exporter::Format::kPerfetto;
  if (auto t = args.Text("from")) {
    ASSIGN_OR_RETURN(o.from, rs::ParseTimeArg(*t, "argument 'from'"));
  }
  if (auto t = args.Text("to")) {
    ASSIGN_OR_RETURN(o.to, rs::ParseTimeArg(*t, "argument 'to'"));
  }
  o.nodes = args.Strings("nodes");
  rec.BeginCall(kAnalysisTimeLimitNs);  // the node names, once per server
  for (const std::string& n : o.nodes) RETURN_IF_ERROR(rec.CheckNode(n, "argument 'nodes'"));
  static int count = 0;  // traces written by this server (it answers one request at a time)
  static int written = 0;
  static int64_t written_bytes = 0;
  if (written >= kMaxTraces || written_bytes >= kMaxTraceBytes) {
    return rs::Error("this server has written " + std::to_string(written) + " traces (" +
                     std::to_string(written_bytes >> 20) + " MiB) to " + ctx.trace_dir +
                     ", its limit (" + std::to_string(kMaxTraces) + " traces or " +
                     std::to_string(kMaxTraceBytes >> 20) +
                     " MiB): open the traces written so far, or ask the person to start the "
                     "server again");
  }
  // The report's verdict and evidence go on a track of their own: its JSON, as the report
  // command writes it, in a private file for the export's time. Without it (the analysis
  // failed, no temporary file) the trace is written unmarked, and the result says why.
  std::string unmarked;
  TempReport report_file;
  if (rs::Result<const Json*> report = rec.ReportJson(); !report.ok()) {
    unmarked = "the report failed: " + report.error().message();
  } else if (rs::Result<std::string> path = report_file.Write(**report); !path.ok()) {
    unmarked = path.error().message();
  } else {
    o.report = *path;
  }
  std::string too_large;  // the exporter's warning that the UI may not open it
  o.warn = [&](const std::string& w) { too_large = w; };
  rs::Result<rs::exporter::ExportResult> done = rs::Error("no file name tried");
  for (int i = 0; i < kNameTries; ++i) {
    o.output = TraceName(ctx.trace_dir, ++count);
    if (::access(o.output.c_str(), F_OK) == 0) continue;  // taken: the next count
    done = rs::exporter::Export(o);
    break;
  }
  if (!done.ok()) return done.error();
  const auto& r = done.value();
  ++written;
  written_bytes += r.bytes;
  const int64_t from = o.from ? o.from->Resolve(r.recording_start_ns) : r.summary.first_ts;
  const int64_t to = o.to ? o.to->Resolve(r.recording_start_ns) : r.summary.last_ts;
  Json out = {{"path", o.output},
              {"bytes", r.bytes},
              {"packets", r.packets},
              {"tracks", r.tracks},
              {"events", r.stats.events()},
              {"from_utc", rs::FormatUtc(from)},
              {"to_utc", rs::FormatUtc(to)},
              {"nodes", o.nodes},
              {"verdict_marks", r.stats.marks},
              {"truncated", false}};
  std::string text = "wrote " + o.output + " (" + std::to_string(r.bytes) + " bytes, " +
                     std::to_string(r.stats.events()) + " events, " + rs::FormatUtc(from) + " to " +
                     rs::FormatUtc(to) + "): open it in https://ui.perfetto.dev";
  if (!unmarked.empty()) text += "\nwithout the report's verdict marked (" + unmarked + ")";
  if (!too_large.empty()) {
    out["warning"] = too_large;
    text += "\nwarning: " + too_large;
  }
  return ToolOutput{std::move(out), std::move(text)};
}

}  // namespace

Tool ExportTraceTool() {
  Tool t;
  t.name = "export_trace";
  t.title = "Perfetto trace of a window";
  t.description =
      "Writes a Perfetto trace (as rankscope-export does: node, rank and thread tracks, "
      "collectives linked across ranks, GPU tracks, retransmits, block I/O) of the window "
      "'from'..'to' and of 'nodes' to a new file in the server's trace directory, and returns "
      "its path, for a person to open in https://ui.perfetto.dev. Times as node_timeline "
      "takes them. At most " +
      std::to_string(kMaxTraces) + " traces (and " + std::to_string(kMaxTraceBytes >> 20) +
      " MiB) per server.";
  t.params = {Param("from", Param::Type::kStringOrInteger,
                    "start of the window (default: the recording's start): ISO 8601 "
                    "UTC, ns since the epoch, or +offset like +40s"),
              Param("to", Param::Type::kStringOrInteger, "end of the window (default: the end)"),
              Param("nodes", Param::Type::kStringList, "only these nodes (default: all)")};
  t.output_schema = Schema();
  t.read_only = false;
  t.run = Run;
  return t;
}

}  // namespace rs::analyzer::mcp
