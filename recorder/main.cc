// rankscope-record: eBPF capture on one node -> NODE.rsb bundle. See man/rankscope-record.8.
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "recorder/event_loop.h"
#include "recorder/log.h"
#include "recorder/options.h"
#include "recorder/preflight.h"
#include "recorder/probes.h"
#include "recorder/recording_db.h"
#include "recorder/ring.h"
#include "recorder/trusted_dir.h"
#include "rscore/cli.h"
#include "rscore/duration.h"
#include "rscore/identity.h"
#include "rscore/path.h"
#include "rscore/sqlite.h"
#include "rscore/time_arg.h"

#ifdef RANKSCOPE_WITH_SERVE
#include "recorder/serve/serve_module_loader.h"
#endif

namespace {

using rs::DirOf;

using rs::rec::Log;
using rs::rec::LogInfo;

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

bool g_verbose = false;

int LibbpfPrint(enum libbpf_print_level level, const char* fmt, va_list args) {
  // libbpf's own messages only with -v: a failed tp_btf attempt that falls back to the
  // classic tracepoint is expected and not an error.
  if (!g_verbose || level == LIBBPF_DEBUG) return 0;
  rs::rec::LogAsIs(fmt, args);
  return 0;
}

int Fail(const rs::Error& e, int code) {
  if (code == kExitUsage) {
    Log("%s", rs::cli::WithHelpHint(e.message(), "rankscope-record").c_str());
  } else {
    Log("%s", e.message().c_str());
  }
  return code;
}

rs::Result<rs::NodeName> ResolveNode(const rs::rec::RecorderOptions& opts) {
  rs::NodeNameSources src;
  src.flag = opts.node;
  if (opts.config_path) {
    auto cfg = rs::LoadConfig(*opts.config_path);
    if (!cfg.ok()) return cfg.error().Wrap("--config");
    src.config = cfg->Get("node");
  }
  if (const char* env = std::getenv("RANKSCOPE_NODE"); env && *env) src.env = env;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) src.hostname = host;
  return rs::ResolveNodeName(src);
}

// The bundle's path with its directory resolved, once that is checked (trusted_dir.h).
rs::Result<std::string> TrustedOut(const std::string& out) {
  ASSIGN_OR_RETURN(std::string dir,
                   rs::rec::TrustedDir(DirOf(out), rs::rec::DirUse::kOutput, "--out", geteuid()));
  return (dir == "/" ? "" : dir) + "/" + rs::BaseOf(out);
}

// --recover FILE [--out OUT] [--force]
int RecoverMain(const rs::rec::RecorderOptions& opts) {
  if (access(opts.recover->c_str(), F_OK) != 0) {
    return Fail(rs::Error(*opts.recover + ": " + std::strerror(errno)), kExitError);
  }
  std::string out = opts.out;
  if (out.empty()) {
    std::string path = *opts.recover;  // "DIR/" names DIR
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    auto parsed = rs::rec::ParseTempName(rs::BaseOf(path));
    if (!parsed) {
      return Fail(
          rs::Error(*opts.recover + ": not named like a recorder's temporary database; give --out"),
          kExitUsage);
    }
    out = (path.find('/') == std::string::npos ? "" : DirOf(path) + "/") + parsed->first;
  }
  bool usage = false;
  if (auto r = rs::rec::CheckOutPath(out, opts.force, &usage); !r.ok()) {
    return Fail(r.error(), usage ? kExitUsage : kExitError);
  }
  auto trusted = TrustedOut(out);
  if (!trusted.ok()) return Fail(trusted.error(), kExitError);
  auto res = rs::rec::Recover(*opts.recover, *trusted, opts.force);
  if (!res.ok()) return Fail(res.error(), kExitError);
  std::string rows;
  for (const auto& [table, n] : res->rows) {
    if (n == 0) continue;
    rows += (rows.empty() ? "" : ", ") + table + " " + std::to_string(n);
  }
  LogInfo("wrote %s: node %s, %lld events%s%s, %s, %s", res->out_path.c_str(), res->node.c_str(),
          static_cast<long long>(res->events), rows.empty() ? "" : (" (" + rows + ")").c_str(),
          res->indexes_left_out ? ", without indexes" : "",
          rs::FormatDuration(res->end_ns - res->start_ns).c_str(),
          res->finished ? "a finished recording whose bundle had not been written"
                        : "recovered up to its last committed event (stop_reason "
                          "'recovered')");
  return kExitOk;
}

// Releases --ring-dir/recorder.pid on every return.
struct RingDirClaim {
  std::string dir;
  ~RingDirClaim() {
    if (!dir.empty()) rs::rec::ReleaseRingDir(dir);
  }
};

// `rankscope-record cut`: the ring's recorder writes a cut; its path goes to stdout. The pid
// it signals is read from the ring directory: only from one no other user can write.
int CutMain(const rs::rec::RecorderOptions& opts) {
  auto ring_dir =
      rs::rec::TrustedDir(opts.ring_dir, rs::rec::DirUse::kPrivate, "--ring-dir", geteuid());
  if (!ring_dir.ok()) return Fail(ring_dir.error(), kExitError);
  auto cut = rs::rec::RequestCut(*ring_dir, opts.cut_timeout_ns);
  if (!cut.ok()) return Fail(cut.error(), kExitError);
  std::printf("%s\n", cut->c_str());
  return std::fflush(stdout) == 0 ? kExitOk : kExitError;
}

// --ring: the ring directory is this recorder's (recorder.pid); a ring left by a recorder
// that died (kill -9, power) becomes a cut with stop_reason 'recovered' before recording
// starts, so nothing it had committed is lost and nothing stale stays. The working database
// is named after NODE.rsb in the ring directory; the bundles go to the cut directory.
// Both directories must be the recorder's alone (trusted_dir.h): it reads cut requests and
// its pid file there as its own; from here on they are named by their resolved paths.
rs::Result<std::string> PrepareRing(rs::rec::RecorderOptions& opts, const std::string& node) {
  RETURN_IF_ERROR(rs::rec::MakeDirs(opts.ring_dir));
  ASSIGN_OR_RETURN(opts.ring_dir, rs::rec::TrustedDir(opts.ring_dir, rs::rec::DirUse::kPrivate,
                                                      "--ring-dir", geteuid()));
  const std::string cut_dir = rs::rec::CutDir(opts);
  RETURN_IF_ERROR(rs::rec::MakeDirs(cut_dir));
  ASSIGN_OR_RETURN(opts.cut_dir,
                   rs::rec::TrustedDir(cut_dir, rs::rec::DirUse::kPrivate, "--cut-dir", geteuid()));
  if (access(rs::rec::CutDir(opts).c_str(), W_OK) != 0) {
    return rs::Error(rs::rec::CutDir(opts) + ": cannot write cuts there: " + std::strerror(errno));
  }
  RETURN_IF_ERROR(rs::rec::ClaimRingDir(opts.ring_dir));
  for (const std::string& gone : rs::rec::RemoveStaleCutFiles(rs::rec::CutDir(opts), node)) {
    LogInfo("removed %s, left by a cut its recorder did not finish", gone.c_str());
  }
  for (const rs::rec::LeftBehind& l : rs::rec::FindLeftBehind(opts.ring_dir)) {
    rs::rec::CutInfo info;
    info.reason = "recovered";
    info.node = node;
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    info.cut_ns = int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
    const std::string out = rs::rec::CutPath(rs::rec::CutDir(opts), info);
    auto made = rs::rec::CutIdDir(rs::rec::CutDir(opts), rs::BaseOf(DirOf(out)));
    auto r = made.ok() ? rs::rec::Recover(l.path, out, /*force=*/false)
                       : rs::Result<rs::rec::RecoverResult>(made.error());
    if (r.ok()) {
      LogInfo(
          "the ring of recorder %d, which is no longer running, is now the cut %s (%lld events)",
          static_cast<int>(l.pid), r->out_path.c_str(), static_cast<long long>(r->events));
      rs::rec::AppendCutLog(opts.ring_dir, r->out_path);
    } else {
      Log("warning: the ring of recorder %d (%s) could not be recovered: %s",
          static_cast<int>(l.pid), l.path.c_str(), r.error().message().c_str());
    }
  }
  return opts.ring_dir + "/" + node + ".rsb";
}

// --serve ADDR[:PORT] and the --serve-NAME options, checked before anything starts (usage
// errors). Without cpp-httplib (the static recorder) there is no server.
#ifdef RANKSCOPE_WITH_SERVE
rs::Result<rs::serve::ServeOptions> ServeOptionsOf(const rs::rec::RecorderOptions& opts) {
  rs::serve::ServeOptions so;
  if (auto r = rs::serve::ParseListen(*opts.serve, so); !r.ok()) return r.error().Wrap("--serve");
  for (const auto& [name, value] : opts.serve_options) {
    if (auto r = rs::serve::SetServeOption(name, value, so); !r.ok()) {
      return r.error().Wrap("--serve-" + name);
    }
  }
  RETURN_IF_ERROR(rs::serve::CheckServeOptions(so, "--serve-"));
  // The clock the node reports is the one its recording's timestamps are in.
  so.simulate_clock_offset_ns = opts.simulate_clock_offset_ns;
  return so;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  auto parsed = rs::rec::ParseOptions(argc, argv);
  if (!parsed.ok()) return Fail(parsed.error(), kExitUsage);
  rs::rec::RecorderOptions& opts = *parsed;  // directories are replaced by their resolved paths
  if (opts.help) {
    std::fputs(rs::rec::UsageText().c_str(), stdout);
    return kExitOk;
  }
  if (opts.version) {
    std::printf("rankscope-record %s\n", RANKSCOPE_VERSION);
    return kExitOk;
  }
  g_verbose = opts.verbose;
  rs::rec::SetQuiet(opts.quiet);
  libbpf_set_print(LibbpfPrint);
  // A write that fails for lack of space is told from other failures (see NoSpace).
  (void)rs::rec::WatchSqliteFullErrors();
#ifdef RANKSCOPE_WITH_SERVE
  std::optional<rs::serve::ServeOptions> serve_options;
  if (opts.serve) {
    auto so = ServeOptionsOf(opts);
    if (!so.ok()) return Fail(so.error(), kExitUsage);
    serve_options = *so;
  }
#else
  if (opts.serve) {
    return Fail(rs::Error("--serve: this rankscope-record was built without its server (the "
                          "static recorder has no cpp-httplib); serve the cuts with "
                          "rankscope-serve, or run the packaged rankscope-record"),
                kExitUsage);
  }
#endif
  // Every database access of the recording is on this thread (the ring drain thread never
  // touches SQLite); with --serve the server's threads read through connections of their own.
  if (auto r = opts.serve ? rs::UseSqliteConnectionsPerThread() : rs::UseSqliteFromOneThreadOnly();
      !r.ok()) {
    return Fail(r.error(), kExitError);
  }
  if (opts.recover) return RecoverMain(opts);
  if (opts.cut_command) return CutMain(opts);

  auto node = ResolveNode(opts);
  if (!node.ok()) return Fail(node.error(), kExitUsage);
  if (auto r = rs::rec::CheckRoot(geteuid()); !r.ok()) return Fail(r.error(), kExitError);
  if (auto r = rs::rec::CheckKernelBtf(); !r.ok()) return Fail(r.error(), kExitError);
  // Refused now, not after recording: an existing bundle (without --force), a directory
  // that does not exist or cannot be written; a ring directory another recorder holds.
  std::string out = opts.out;
  RingDirClaim ring_claim;
  if (opts.ring_ns) {
    auto ring_out = PrepareRing(opts, node->name);
    if (!ring_out.ok()) return Fail(ring_out.error(), kExitError);
    ring_claim.dir = opts.ring_dir;
    out = *ring_out;
  } else {
    bool usage = false;
    if (auto r = rs::rec::CheckOutPath(opts.out, opts.force, &usage); !r.ok()) {
      return Fail(r.error(), usage ? kExitUsage : kExitError);
    }
    auto trusted = TrustedOut(opts.out);
    if (!trusted.ok()) return Fail(trusted.error(), kExitError);
    out = opts.out = *trusted;
  }
  // Before any thread starts (they inherit the mount namespace it may make).
  if (auto r = rs::rec::EnsureTracefs(); !r.ok()) {
    Log("warning: %s", r.error().message().c_str());
  } else if (g_verbose && !r->empty()) {
    Log("%s", r->c_str());
  }

  // Stop requests during start-up also end in a finalized bundle.
  rs::rec::InstallStopSignalHandlers();
  // Recordings of recorders that died here before: each can still become a bundle.
  for (const rs::rec::LeftBehind& l : rs::rec::FindLeftBehind(DirOf(out))) {
    Log("note: %s (%s) was left behind by recorder %d, which is no "
        "longer running; make it a bundle with: %s",
        l.path.c_str(), rs::rec::FormatBytes(l.bytes).c_str(), static_cast<int>(l.pid),
        rs::rec::RecoverCommand(l.path).c_str());
  }
  // The output must be writable before anything is loaded into the kernel.
  // Served, the database is in WAL mode: a query reads a snapshot of the last commit and
  // never holds the recorder's next commit back (a rollback journal would).
  auto writer = rs::rec::RecordingDb::Create(
      out, {.force = opts.force, .journal_mode = opts.serve ? "WAL" : "TRUNCATE"});
  if (!writer.ok()) return Fail(writer.error(), kExitError);

  rs::rec::LoopConfig config;
#ifdef RANKSCOPE_WITH_SERVE
  std::unique_ptr<rs::serve::LoadedServer> server;
  if (serve_options) {
    // A query that holds a snapshot for long lets the WAL grow meanwhile; it is cut back to
    // this after the next checkpoint.
    (void)writer->db().Exec("PRAGMA journal_size_limit=67108864");
    auto bound = rs::serve::LoadedServer::Bind(
        *serve_options, node->name, opts.ring_ns ? rs::rec::CutDir(opts) : "", writer->temp_path(),
        [](const std::string& line) { Log("serve: %s", line.c_str()); });
    if (!bound.ok()) return Fail(bound.error().Wrap("--serve"), kExitError);
    server = std::move(bound).value();
    config.before_end = [&server] { server->Stop(); };
  }
#endif
  // Classic tracepoints are attached by now: back to the node's mount namespace, if tracefs
  // needed one of the recorder's own (while the recorder has one thread: a process with more
  // cannot change it); then the server's threads may start.
  config.after_start = [&] {
    if (auto r = rs::rec::LeaveTracefsNamespace(); !r.ok()) {
      Log("warning: %s", r.error().message().c_str());
    }
#ifdef RANKSCOPE_WITH_SERVE
    if (server) {
      server->Run();
      Log("serving the live recording%s on https://%s:%d to rankscope-fleet (%s)",
          opts.ring_ns ? " and its cuts" : "", serve_options->host.c_str(), server->port(),
          serve_options->tls.ca.empty() ? "bearer token" : "mutual TLS");
    }
#endif
  };
  rs::rec::EventLoop loop(opts, *node, std::move(*writer), rs::rec::MakeProbes(opts),
                          std::move(config));
  auto summary = loop.Run();
  if (!summary.ok()) return Fail(summary.error(), kExitError);
  std::string unwritten;
  if (!summary->unwritten_reason.empty()) {
    unwritten = " (" + std::to_string(summary->unwritten) + " of them " +
                (summary->unwritten_reason == "no_space" ? "for lack of disk space"
                                                         : "after a write error") +
                ")";
  }
  LogInfo("wrote %s: node %s, %llu events, %llu dropped%s%s, %s from %s, stopped by %s",
          loop.writer().out_path().c_str(), node->name.c_str(),
          static_cast<unsigned long long>(summary->events),
          static_cast<unsigned long long>(summary->drops), unwritten.c_str(),
          loop.writer().indexes_left_out() ? ", without indexes" : "",
          rs::FormatDuration(summary->end_ns - summary->start_ns).c_str(),
          rs::FormatUtc(summary->start_ns).c_str(), summary->stop_reason.c_str());
  return kExitOk;
}
