#include "recorder/event_loop.h"

#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>

#include "common.h"
#include "recorder/attach_log.h"
#include "recorder/interfaces.h"
#include "recorder/library_discovery.h"
#include "recorder/log.h"
#include "recorder/process_table.h"
#include "recorder/recording_db.h"
#include "recorder/ring_poller.h"
#include "recorder/sched_probe.h"
#include "rscore/clock.h"
#include "rscore/event_id.h"

namespace rec {
namespace {

std::atomic<int> g_stop_signal{0};

extern "C" void OnStopSignal(int signo) { g_stop_signal.store(signo); }

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}

std::string KernelRelease() {
  utsname u{};
  if (uname(&u) != 0) return "";
  return u.release;
}

rs::Result<void> WriteClockRef(rs::Statement& st, const std::string& node, int64_t seq,
                               const rs::ClockRef& r) {
  st.Bind(1, node).Bind(2, seq).Bind(3, r.kind).Bind(4, r.mono_ns).Bind(5, r.realtime_ns);
  st.Bind(6, r.read_span_ns);
  if (r.maxerror_us >= 0)
    st.Bind(7, r.maxerror_us);
  else
    st.BindNull(7);
  if (r.esterror_us >= 0)
    st.Bind(8, r.esterror_us);
  else
    st.BindNull(8);
  if (r.clock_state.empty())
    st.BindNull(9);
  else
    st.Bind(9, r.clock_state);
  return st.Run();
}

rs::Result<void> WriteSources(rs::Db& db, const std::string& node,
                              const std::vector<SourceSummary>& sources) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("INSERT OR REPLACE INTO sources(node, source, method, events, "
                              "drops, note) VALUES (?, ?, ?, ?, ?, ?)"));
  for (const auto& s : sources) {
    st.Bind(1, node).Bind(2, s.source).Bind(3, s.method);
    st.Bind(4, static_cast<int64_t>(s.events)).Bind(5, static_cast<int64_t>(s.drops));
    if (s.note.empty())
      st.BindNull(6);
    else
      st.Bind(6, s.note);
    RETURN_IF_ERROR(st.Run());
  }
  return rs::Ok();
}

// While recording, only the loop's own COMMITs commit. A write that fails for lack of space
// rolls the whole batch back; the rows the probes write after it, until the loop notices,
// would each commit on their own (and be counted neither as written nor as dropped): the
// commit hook refuses those, and the rollback hook tells the probes (writes_failed).
class CommitGate {
 public:
  CommitGate(rs::Db& db, bool* writes_failed) : db_(db), writes_failed_(writes_failed) {
    sqlite3_commit_hook(db_.raw(), &CommitGate::OnCommit, this);
    sqlite3_rollback_hook(db_.raw(), &CommitGate::OnRollback, this);
  }
  ~CommitGate() {
    sqlite3_commit_hook(db_.raw(), nullptr, nullptr);
    sqlite3_rollback_hook(db_.raw(), nullptr, nullptr);
  }
  CommitGate(const CommitGate&) = delete;
  CommitGate& operator=(const CommitGate&) = delete;
  // Runs `sql` with its commits allowed.
  rs::Result<void> Exec(const char* sql) {
    allow_ = true;
    auto r = db_.Exec(sql);
    allow_ = false;
    return r;
  }

 private:
  static int OnCommit(void* self) { return static_cast<CommitGate*>(self)->allow_ ? 0 : 1; }
  static void OnRollback(void* self) {
    auto* gate = static_cast<CommitGate*>(self);
    if (!gate->allow_) *gate->writes_failed_ = true;
  }
  rs::Db& db_;
  bool* writes_failed_;
  bool allow_ = false;
};

}  // namespace

void InstallStopSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking poll returns at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void RequestStop(int signo) { g_stop_signal.store(signo); }

EventLoop::EventLoop(const RecorderOptions& opts, rs::NodeName node, RecordingDb writer,
                     std::vector<std::unique_ptr<Probe>> probes, LoopConfig config)
    : opts_(opts),
      node_(std::move(node)),
      writer_(std::move(writer)),
      probes_(std::move(probes)),
      config_(std::move(config)) {}

rs::Result<RecordingSummary> EventLoop::Run() {
  auto summary = Record();
  if (!summary.ok() && recording_began_ && !writer_.kept()) {
    // What was committed stays for --recover rather than going with the error.
    writer_.Keep();
    return rs::Error(summary.error().message() + "; what was recorded until then is kept in " +
                     writer_.temp_path() + ": " + RecoverCommand(writer_.temp_path()));
  }
  return summary;
}

rs::Result<RecordingSummary> EventLoop::Record() {
  rs::Db& db = writer_.db();
  RecordingSummary summary;
  summary.recording_id = rs::NewRecordingId();
  rs::EventIdAllocator ids(rs::RecordingKey(summary.recording_id));
  rs::WallClock wall(rs::SystemClock(), opts_.simulate_clock_offset_ns,
                     opts_.simulate_clock_drift_ppm);
  rs::MonoToWall mono_to_wall;
  std::vector<rs::ClockRef> refs;
  // Each reference is written as it is taken (a recovered recording has them too).
  ASSIGN_OR_RETURN(rs::Statement ref_insert,
                   db.Prepare("INSERT INTO clock_refs(node, seq, kind, mono_ns, realtime_ns, "
                              "read_span_ns, maxerror_us, esterror_us, clock_state) VALUES "
                              "(?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  int64_t ref_seq = 0;
  auto take_ref = [&](const char* kind) {
    refs.push_back(wall.TakeRef(kind));
    mono_to_wall.Add(refs.back());
    return WriteClockRef(ref_insert, node_.name, ref_seq++, refs.back());
  };
  RETURN_IF_ERROR(take_ref("start"));
  summary.start_ns = refs.front().realtime_ns;

  std::optional<uint64_t> own_netns = ReadNetnsInode(config_.proc_root, getpid());
  uint64_t scope_netns = 0;
  if (opts_.scope == Scope::kNetns) {
    if (!own_netns) {
      return rs::Error("--scope netns: cannot read the recorder's network namespace from " +
                       config_.proc_root + "/" + std::to_string(getpid()) + "/ns/net");
    }
    scope_netns = *own_netns;
  }

  // Metadata known at the start. Never the command line or the simulated clock values.
  const std::pair<std::string, std::string> meta[] = {
      {"recording_id", summary.recording_id},
      {"node", node_.name},
      {"node_source", node_.source},
      {"host", Hostname()},
      {"kernel", KernelRelease()},
      {"recorder_version", RANKSCOPE_VERSION},
      {"bpf_abi_version", std::to_string(RS_BPF_ABI_VERSION)},
      {"start_ns", std::to_string(summary.start_ns)},
      {"scope", std::string(ScopeName(opts_.scope))},
      {"netns", own_netns ? std::to_string(*own_netns) : ""},
      {"cuda_launch_sample", std::to_string(opts_.cuda_launch_sample)},
      {"sched_min_interval_ns", std::to_string(SchedProbe::kMinIntervalNs)},
      {"duration_requested_ns", opts_.duration_ns ? std::to_string(*opts_.duration_ns) : ""},
  };
  for (const auto& [k, v] : meta) {
    if (!v.empty()) RETURN_IF_ERROR(writer_.SetMetadata(k, v));
  }
  ASSIGN_OR_RETURN(std::vector<InterfaceAddress> addrs, ListInterfaceAddresses());
  RETURN_IF_ERROR(WriteInterfaces(db, node_.name, addrs, own_netns));

  AttachLog attach_log(&db, node_.name, opts_.verbose);
  ProcessTable processes(&db, node_.name, config_.proc_root, scope_netns,
                         [&wall] { return wall.NowNs(); });
  for (int pid : opts_.pids) {
    auto r = processes.Trace(pid);
    if (!r.ok()) return r.error().Wrap("--pid " + std::to_string(pid));
  }

  // The shared poller goes before the probes whose maps it polls, on every return path
  // (the probes live in probes_, which outlives this function).
  RingPoller poller;
  ProcLibraryMaps library_maps(config_.proc_root);
  RecorderContext ctx;
  ctx.poller = &poller;
  ctx.library_maps = &library_maps;
  ctx.db = &db;
  ctx.node = node_.name;
  ctx.ids = &ids;
  ctx.clock = &mono_to_wall;
  ctx.options = &opts_;
  ctx.scope_netns = scope_netns;
  ctx.proc_root = config_.proc_root;
  ctx.attach_log = &attach_log;
  ctx.processes = &processes;

  std::optional<CommitGate> gate;
  gate.emplace(db, &ctx.writes_failed);
  RETURN_IF_ERROR(db.Exec("BEGIN"));
  std::vector<SourceSummary> sources(probes_.size());
  std::vector<bool> started(probes_.size(), false);
  std::string start_errors;
  for (size_t i = 0; i < probes_.size(); ++i) {
    Probe& p = *probes_[i];
    sources[i].source = std::string(p.source());
    auto r = p.Start(ctx);
    if (r.ok()) {
      started[i] = true;
      continue;
    }
    sources[i].note = r.error().message();
    start_errors += (start_errors.empty() ? "" : "; ") + r.error().message();
  }
  if (config_.after_start) config_.after_start();
  size_t n_started = 0;
  for (bool s : started) n_started += s;
  // Sources that failed are named one per line only when recording goes ahead; otherwise the
  // single error below says it all.
  // Sources left out on purpose (--sources) are named once, in the line below.
  std::string left_out;
  for (size_t i = 0; i < probes_.size() && n_started > 0; ++i) {
    if (started[i]) continue;
    if (probes_[i]->method() == "off" && sources[i].note == "left out by --sources") {
      left_out += (left_out.empty() ? "; left out: " : ", ") + sources[i].source;
      continue;
    }
    Log("%s: not recording: %s", sources[i].source.c_str(), sources[i].note.c_str());
  }
  if (n_started == 0) {
    (void)db.Exec("ROLLBACK");  // no bundle: the temporary db is removed with the writer
    return rs::Error("no capture source could start (" + start_errors +
                     "); check that the kernel has BTF and tracepoints and that you are root");
  }
  Log("recording node %s (%zu of %zu sources%s) -> %s", node_.name.c_str(), n_started,
      probes_.size(), left_out.c_str(), writer_.out_path().c_str());

  recording_began_ = true;

  auto events_of = [&](size_t i) -> uint64_t { return started[i] ? probes_[i]->events() : 0; };
  auto total_events = [&] {
    uint64_t n = 0;
    for (size_t i = 0; i < probes_.size(); ++i) n += events_of(i);
    return n;
  };
  auto fan_out = [&] {
    std::vector<int> execs;
    execs.swap(ctx.exec_pids);
    for (int pid : execs) {
      for (size_t i = 0; i < probes_.size(); ++i) {
        if (started[i]) probes_[i]->OnProcessExec(ctx, pid);
      }
    }
    for (int pid : processes.TakeNewlyTraced()) {
      for (size_t i = 0; i < probes_.size(); ++i) {
        if (started[i]) probes_[i]->OnProcessTraced(ctx, pid);
      }
    }
  };
  // The sources table as of now. Written with every commit, so that a recording recovered
  // after the recorder died has it too; rewritten at the end.
  auto snapshot_sources = [&] {
    std::vector<SourceSummary> now = sources;
    for (size_t i = 0; i < probes_.size(); ++i) {
      SourceSummary& s = now[i];
      s.method = started[i] ? probes_[i]->method() : "off";
      s.events = events_of(i);
      s.drops = started[i] ? probes_[i]->drops() : 0;
      if (started[i] && s.note.empty()) s.note = probes_[i]->note();
    }
    return now;
  };
  auto in_transaction = [&] { return sqlite3_get_autocommit(db.raw()) == 0; };

  // Writing stops for good at the first write that fails (a full disk): the batch being
  // written is rolled back, and from then on every round's rows are rolled back too; each
  // source's rows not committed are counted as dropped (metadata <source>_drops_no_space, or
  // _write_error). The reserve is released so that the bundle can still be written.
  std::vector<uint64_t> committed(probes_.size(), 0);  // each source's rows at the last commit
  bool writing = true;
  // `why`: the failed write's error; empty when the disk is nearly full (see SpaceShort).
  auto stop_writing = [&](const std::string& why) {
    const bool no_space = why.empty() || writer_.NoSpace();
    const uint64_t free_bytes = writer_.FreeBytes();
    std::string what = no_space ? "disk full" : why;
    if (why.empty()) {
      what = "disk nearly full, the bundle needs about " +
             FormatBytes(writer_.BundleBytesNeeded()) + " to be written";
    }
    if (in_transaction()) (void)db.Exec("ROLLBACK");
    writer_.ReleaseReserve();
    writing = false;
    ctx.writes_failed = true;
    summary.unwritten_reason = no_space ? "no_space" : "write_error";
    summary.writing_stopped_ns = wall.NowNs();
    uint64_t kept = 0;
    for (uint64_t n : committed) kept += n;
    Log("%s: %s (%s free): stopped writing events; the bundle keeps "
        "the %llu committed until now, later ones are counted as dropped (%s)",
        writer_.temp_path().c_str(), what.c_str(), FormatBytes(free_bytes).c_str(),
        static_cast<unsigned long long>(kept), summary.unwritten_reason.c_str());
    (void)db.Exec("BEGIN");
  };
  auto commit = [&] {
    if (!in_transaction()) {  // a failed write rolled the batch back
      stop_writing(sqlite3_errmsg(db.raw()));
      return;
    }
    auto r = WriteSources(db, node_.name, snapshot_sources());
    if (r.ok()) r = gate->Exec("COMMIT");
    if (!r.ok()) {
      stop_writing(r.error().message());
      return;
    }
    for (size_t i = 0; i < probes_.size(); ++i) committed[i] = events_of(i);
    if (writer_.SpaceShort()) {
      (void)db.Exec("BEGIN");
      stop_writing("");
    } else if (auto b = db.Exec("BEGIN"); !b.ok()) {
      stop_writing(b.error().message());
    }
  };

  fan_out();  // --pid processes
  // From here the kernel rings are emptied by the drain thread; rows are still decoded and
  // inserted on this thread, in WaitAndDispatch.
  if (auto r = poller.StartDrainThread(); !r.ok()) {
    Log("%s; reading the rings on the main thread", r.error().message().c_str());
  }
  const int64_t t0 = rs::MonotonicNowNs();
  int64_t last_tick = t0, last_ref = t0, last_commit = t0;
  uint64_t rows_at_commit = 0;
  for (;;) {
    if (g_stop_signal.load() != 0) {
      summary.stop_reason = g_stop_signal.load() == SIGTERM ? "SIGTERM" : "SIGINT";
      break;
    }
    int64_t now = rs::MonotonicNowNs();
    if (opts_.duration_ns && now - t0 >= *opts_.duration_ns) {
      summary.stop_reason = "duration";
      break;
    }
    int timeout = config_.poll_timeout_ms;
    if (opts_.duration_ns) {
      int64_t left_ms = (*opts_.duration_ns - (now - t0)) / 1'000'000 + 1;
      if (left_ms < timeout) timeout = static_cast<int>(left_ms);
    }
    poller.WaitAndDispatch(timeout);
    fan_out();
    now = rs::MonotonicNowNs();
    if (now - last_tick >= config_.tick_period_ns) {
      last_tick = now;
      for (size_t i = 0; i < probes_.size(); ++i) {
        if (started[i]) probes_[i]->Tick(ctx);
      }
      fan_out();
    }
    if (now - last_ref >= config_.clock_ref_period_ns) {
      last_ref = now;
      (void)take_ref("periodic");  // a failed write shows at the commit
    }
    if (!writing) {  // this round's rows go
      if (in_transaction()) (void)db.Exec("ROLLBACK");
      (void)db.Exec("BEGIN");
      continue;
    }
    uint64_t rows = total_events();
    if (!in_transaction() || rows - rows_at_commit >= config_.commit_rows ||
        now - last_commit >= config_.commit_period_ns) {
      commit();
      rows_at_commit = rows;
      last_commit = now;
    }
  }

  // Finish: back to reading the rings on this thread; detach and drain every probe, then the
  // end reference and the summary tables.
  ctx.finishing = true;  // from here no probe attaches anything new
  if (!writing) {
    // What the probes write while finishing (the rings' last records, calls in flight,
    // counters) is kept if it fits in the space released.
    if (in_transaction()) (void)db.Exec("ROLLBACK");
    (void)db.Exec("BEGIN");
  }
  std::vector<uint64_t> before_finish(probes_.size());
  for (size_t i = 0; i < probes_.size(); ++i) before_finish[i] = events_of(i);
  poller.StopDrainThread();
  for (size_t i = 0; i < probes_.size(); ++i) {
    if (!started[i]) continue;
    auto r = probes_[i]->Finish(ctx);
    if (!r.ok()) {
      sources[i].note = "finish: " + r.error().message();
      Log("%s: %s", sources[i].source.c_str(), r.error().message().c_str());
    }
  }
  rs::Result<void> end_ref = take_ref("end");
  summary.end_ns = refs.back().realtime_ns;
  const std::vector<SourceSummary> final_sources = snapshot_sources();
  // The end of the recording, in one transaction: sources, end metadata, and the rows the
  // probes wrote while finishing unless `finish_rows` is false (they were rolled back).
  auto write_end = [&](bool finish_rows) -> rs::Result<void> {
    RETURN_IF_ERROR(end_ref);
    summary.sources = final_sources;
    summary.events = summary.drops = summary.unwritten = 0;
    std::vector<std::pair<std::string, std::string>> meta = {
        {"end_ns", std::to_string(summary.end_ns)}, {"stop_reason", summary.stop_reason}};
    for (size_t i = 0; i < probes_.size(); ++i) {
      SourceSummary& s = summary.sources[i];
      if (!writing) {
        const uint64_t unwritten = (finish_rows ? before_finish[i] : events_of(i)) - committed[i];
        s.events -= unwritten;
        s.drops += unwritten;
        summary.unwritten += unwritten;
        if (started[i]) {
          meta.emplace_back(s.source + "_drops_" + summary.unwritten_reason,
                            std::to_string(unwritten));
        }
      }
      summary.events += s.events;
      summary.drops += s.drops;
    }
    if (!writing) {
      meta.emplace_back("writing_stopped_ns", std::to_string(summary.writing_stopped_ns));
      meta.emplace_back("writing_stopped_reason", summary.unwritten_reason);
    }
    RETURN_IF_ERROR(WriteSources(db, node_.name, summary.sources));
    for (const auto& [k, v] : meta) RETURN_IF_ERROR(writer_.SetMetadata(k, v));
    if (!in_transaction()) return rs::Error("the transaction was rolled back");
    return gate->Exec("COMMIT");
  };
  rs::Result<void> ended = in_transaction() ? write_end(true) : rs::Error(sqlite3_errmsg(db.raw()));
  if (!ended.ok()) {
    // Without what finishing wrote: the summary alone (the probes' rows since the last commit
    // are counted as dropped).
    if (writing) {
      stop_writing(ended.error().message());
    } else {
      if (in_transaction()) (void)db.Exec("ROLLBACK");
      (void)db.Exec("BEGIN");
    }
    end_ref = WriteClockRef(ref_insert, node_.name, ref_seq++, refs.back());
    ended = write_end(false);
    if (!ended.ok()) {
      if (in_transaction()) (void)db.Exec("ROLLBACK");
      return ended.error().Wrap("cannot write the end of the recording");
    }
  }
  gate.reset();  // finalizing commits on its own
  RETURN_IF_ERROR(writer_.Finalize(/*with_indexes=*/summary.unwritten_reason != "no_space"));
  return summary;
}

}  // namespace rec
