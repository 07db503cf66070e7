#include "recorder/event_loop.h"

#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "common.h"
#include "recorder/attach_log.h"
#include "recorder/interfaces.h"
#include "recorder/library_discovery.h"
#include "recorder/process_table.h"
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

rs::Result<void> WriteClockRefs(rs::Db& db, const std::string& node,
                                const std::vector<rs::ClockRef>& refs) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("INSERT INTO clock_refs(node, seq, kind, mono_ns, realtime_ns, "
                              "read_span_ns, maxerror_us, esterror_us, clock_state) VALUES "
                              "(?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  int64_t seq = 0;
  for (const rs::ClockRef& r : refs) {
    st.Bind(1, node).Bind(2, seq++).Bind(3, r.kind).Bind(4, r.mono_ns).Bind(5, r.realtime_ns);
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
    RETURN_IF_ERROR(st.Run());
  }
  return rs::Ok();
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

EventLoop::EventLoop(const RecorderOptions& opts, rs::NodeName node, rs::BundleWriter writer,
                     std::vector<std::unique_ptr<Probe>> probes, LoopConfig config)
    : opts_(opts),
      node_(std::move(node)),
      writer_(std::move(writer)),
      probes_(std::move(probes)),
      config_(std::move(config)) {}

rs::Result<RecordingSummary> EventLoop::Run() {
  rs::Db& db = writer_.db();
  // The temporary database is thrown away if the recorder dies, so it needs no rollback
  // journal: ~20% more rows/s than WAL on the insert path (tests/bench/recorder.md).
  RETURN_IF_ERROR(db.Exec("PRAGMA journal_mode=OFF; PRAGMA cache_size=-32768"));
  RecordingSummary summary;
  summary.recording_id = rs::NewRecordingId();
  rs::EventIdAllocator ids(rs::RecordingKey(summary.recording_id));
  rs::WallClock wall(rs::SystemClock(), opts_.simulate_clock_offset_ns,
                     opts_.simulate_clock_drift_ppm);
  rs::MonoToWall mono_to_wall;
  std::vector<rs::ClockRef> refs;
  auto take_ref = [&](const char* kind) {
    refs.push_back(wall.TakeRef(kind));
    mono_to_wall.Add(refs.back());
  };
  take_ref("start");
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
  for (size_t i = 0; i < probes_.size() && n_started > 0; ++i) {
    if (started[i]) continue;
    std::fprintf(stderr, "rankscope-record: %s: not recording: %s\n", sources[i].source.c_str(),
                 sources[i].note.c_str());
  }
  if (n_started == 0) {
    (void)db.Exec("ROLLBACK");  // no bundle: the temporary db is removed with the writer
    return rs::Error("no capture source could start (" + start_errors +
                     "); check that the kernel has BTF and tracepoints and that you are root");
  }
  std::fprintf(stderr, "rankscope-record: recording node %s (%zu of %zu sources) -> %s\n",
               node_.name.c_str(), n_started, probes_.size(), writer_.out_path().c_str());

  auto total_events = [&] {
    uint64_t n = 0;
    for (size_t i = 0; i < probes_.size(); ++i) {
      if (started[i]) n += probes_[i]->events();
    }
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

  fan_out();  // --pid processes
  // From here the kernel rings are emptied by the drain thread; rows are still decoded and
  // inserted on this thread, in WaitAndDispatch.
  if (auto r = poller.StartDrainThread(); !r.ok()) {
    std::fprintf(stderr, "rankscope-record: %s; reading the rings on the main thread\n",
                 r.error().message().c_str());
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
      take_ref("periodic");
    }
    uint64_t rows = total_events();
    if (rows - rows_at_commit >= config_.commit_rows ||
        now - last_commit >= config_.commit_period_ns) {
      RETURN_IF_ERROR(db.Exec("COMMIT; BEGIN"));
      rows_at_commit = rows;
      last_commit = now;
    }
  }

  // Finish: back to reading the rings on this thread; detach and drain every probe, then the
  // end reference and the summary tables.
  ctx.finishing = true;  // from here no probe attaches anything new
  poller.StopDrainThread();
  for (size_t i = 0; i < probes_.size(); ++i) {
    if (!started[i]) continue;
    auto r = probes_[i]->Finish(ctx);
    if (!r.ok()) {
      sources[i].note = "finish: " + r.error().message();
      std::fprintf(stderr, "rankscope-record: %s: %s\n", sources[i].source.c_str(),
                   r.error().message().c_str());
    }
  }
  take_ref("end");
  summary.end_ns = refs.back().realtime_ns;
  for (size_t i = 0; i < probes_.size(); ++i) {
    SourceSummary& s = sources[i];
    s.method = started[i] ? probes_[i]->method() : "off";
    s.events = started[i] ? probes_[i]->events() : 0;
    s.drops = started[i] ? probes_[i]->drops() : 0;
    if (started[i] && s.note.empty()) s.note = probes_[i]->note();
    summary.events += s.events;
    summary.drops += s.drops;
  }
  summary.sources = sources;
  RETURN_IF_ERROR(WriteSources(db, node_.name, sources));
  RETURN_IF_ERROR(WriteClockRefs(db, node_.name, refs));
  RETURN_IF_ERROR(writer_.SetMetadata("end_ns", std::to_string(summary.end_ns)));
  RETURN_IF_ERROR(writer_.SetMetadata("stop_reason", summary.stop_reason));
  RETURN_IF_ERROR(db.Exec("COMMIT"));
  RETURN_IF_ERROR(writer_.Finalize());
  return summary;
}

}  // namespace rec
