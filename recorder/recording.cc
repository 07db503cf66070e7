#include "recorder/recording.h"

#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "bpf/abi/common.h"
#include "recorder/interfaces.h"
#include "recorder/log.h"
#include "recorder/sched_probe.h"
#include "rscore/duration.h"
#include "rscore/time_arg.h"

namespace rs::rec {
namespace {

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

// The running kernel's boot id (a random UUID per boot, the same in every namespace): nodes
// whose recordings carry the same one ran on one kernel, sharing its CPUs and pid space.
std::string BootId(const std::string& proc_root) {
  std::ifstream in(proc_root + "/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace

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

rs::Result<void> Recording::TakeRef(const char* kind) {
  refs_.push_back(wall_->TakeRef(kind));
  mono_to_wall_.Add(refs_.back());
  return WriteClockRef(*ref_insert_, node_.name, ref_seq_++, refs_.back());
}

rs::Result<void> Recording::Begin() {
  ids_.emplace(rs::RecordingKey(summary_.recording_id));
  wall_.emplace(rs::SystemClock(), opts_.simulate_clock_offset_ns, opts_.simulate_clock_drift_ppm);
  ASSIGN_OR_RETURN(rs::Statement ref_insert, PrepareClockRefInsert(db_));
  ref_insert_.emplace(std::move(ref_insert));
  RETURN_IF_ERROR(TakeRef("start"));
  summary_.start_ns = refs_.front().realtime_ns;
  if (opts_.ring_ns) {
    ring_.emplace(*opts_.ring_ns, opts_.ring_size_bytes, rs::RecordingKey(summary_.recording_id));
  }
  if (opts_.cut_on_slowdown) slowdown_.emplace(*opts_.cut_on_slowdown);

  own_netns_ = ReadNetnsInode(config_.proc_root, getpid());
  if (opts_.scope == Scope::kNetns) {
    if (!own_netns_) {
      return rs::Error("--scope netns: cannot read the recorder's network namespace from " +
                       config_.proc_root + "/" + std::to_string(getpid()) + "/ns/net");
    }
    scope_netns_ = *own_netns_;
  }
  RETURN_IF_ERROR(WriteMetadataAtStart());
  ASSIGN_OR_RETURN(std::vector<InterfaceAddress> addrs, ListInterfaceAddresses());
  RETURN_IF_ERROR(WriteInterfaces(db_, node_.name, addrs, own_netns_));

  attach_log_.emplace(&db_, node_.name, opts_.verbose);
  rs::WallClock* wall = &*wall_;
  processes_.emplace(&db_, node_.name, config_.proc_root, scope_netns_,
                     [wall] { return wall->NowNs(); });
  for (int pid : opts_.pids) {
    auto r = processes_->Trace(pid);
    if (!r.ok()) return r.error().Wrap("--pid " + std::to_string(pid));
  }
  SetUpContext();
  return rs::Ok();
}

// Metadata known at the start. Never the command line or the simulated clock values.
rs::Result<void> Recording::WriteMetadataAtStart() {
  const std::pair<std::string, std::string> meta[] = {
      {"recording_id", summary_.recording_id},
      {"node", node_.name},
      {"node_source", node_.source},
      {"host", Hostname()},
      {"kernel", KernelRelease()},
      {"boot_id", BootId(config_.proc_root)},
      {"recorder_version", RANKSCOPE_VERSION},
      {"bpf_abi_version", std::to_string(RS_BPF_ABI_VERSION)},
      {"start_ns", std::to_string(summary_.start_ns)},
      {"scope", std::string(ScopeName(opts_.scope))},
      {"netns", own_netns_ ? std::to_string(*own_netns_) : ""},
      {"cuda_launch_sample", std::to_string(opts_.cuda_launch_sample)},
      {"sched_min_interval_ns", std::to_string(SchedProbe::kMinIntervalNs)},
      {"duration_requested_ns", opts_.duration_ns ? std::to_string(*opts_.duration_ns) : ""},
  };
  for (const auto& [k, v] : meta) {
    if (!v.empty()) RETURN_IF_ERROR(writer_.SetMetadata(k, v));
  }
  return rs::Ok();
}

void Recording::SetUpContext() {
  library_maps_.emplace(config_.proc_root);
  ctx_.poller = &poller_;
  ctx_.library_maps = &*library_maps_;
  ctx_.db = &db_;
  ctx_.node = node_.name;
  ctx_.ids = &*ids_;
  ctx_.clock = &mono_to_wall_;
  ctx_.options = &opts_;
  ctx_.scope_netns = scope_netns_;
  ctx_.proc_root = config_.proc_root;
  if (!opts_.simulate_rdma_sysfs.empty()) ctx_.sys_root = opts_.simulate_rdma_sysfs;
  ctx_.attach_log = &*attach_log_;
  ctx_.processes = &*processes_;
}

rs::Result<void> Recording::StartProbes() {
  gate_.emplace(db_, &ctx_.writes_failed);
  RETURN_IF_ERROR(db_.Exec("BEGIN"));
  std::string start_errors;
  for (size_t i = 0; i < probes_.size(); ++i) {
    Probe& p = *probes_[i];
    sources_[i].source = std::string(p.source());
    auto r = p.Start(ctx_);
    if (r.ok()) {
      started_[i] = true;
      continue;
    }
    sources_[i].note = r.error().message();
    if (p.left_out()) continue;
    start_errors += (start_errors.empty() ? "" : "; ") + r.error().message();
  }
  if (config_.after_start) config_.after_start();
  size_t n_started = 0;
  for (bool s : started_) n_started += s;
  if (n_started == 0) {
    (void)db_.Exec("ROLLBACK");  // no bundle: the temporary db is removed with the writer
    return rs::Error("no capture source could start (" + start_errors +
                     "); check that the kernel has BTF and tracepoints and that you are root");
  }
  // Sources that failed are named one per line; sources left out on purpose (--sources) are
  // named once, in the line that says recording began.
  std::string left_out;
  for (size_t i = 0; i < probes_.size(); ++i) {
    if (started_[i]) continue;
    if (probes_[i]->left_out()) {
      left_out += (left_out.empty() ? "; left out: " : ", ") + sources_[i].source;
      continue;
    }
    Log("%s: not recording: %s", sources_[i].source.c_str(), sources_[i].note.c_str());
  }
  LogInfo("recording node %s (%zu of %zu sources%s) -> %s, from %s", node_.name.c_str(), n_started,
          probes_.size(), left_out.c_str(), writer_.out_path().c_str(),
          rs::FormatUtc(summary_.start_ns).c_str());
  return rs::Ok();
}

uint64_t Recording::TotalEvents() const {
  uint64_t n = 0;
  for (size_t i = 0; i < probes_.size(); ++i) n += EventsOf(i);
  return n;
}

void Recording::FanOut() {
  std::vector<ProcessExec> execs;
  execs.swap(ctx_.execs);
  for (const ProcessExec& exec : execs) {
    for (size_t i = 0; i < probes_.size(); ++i) {
      if (started_[i]) probes_[i]->OnProcessExec(ctx_, exec);
    }
  }
  for (int pid : processes_->TakeNewlyTraced()) {
    for (size_t i = 0; i < probes_.size(); ++i) {
      if (started_[i]) probes_[i]->OnProcessTraced(ctx_, pid);
    }
  }
}

std::vector<SourceSummary> Recording::SnapshotSources() const {
  std::vector<SourceSummary> now = sources_;
  for (size_t i = 0; i < probes_.size(); ++i) {
    SourceSummary& s = now[i];
    s.method = started_[i] ? probes_[i]->method() : "off";
    s.events = EventsOf(i);
    if (ring_) s.events -= ring_->aged_out(EventTableOf(s.source));  // the rows still held
    s.drops = started_[i] ? probes_[i]->drops() : 0;
    if (started_[i] && s.note.empty()) s.note = probes_[i]->note();
  }
  return now;
}

// `why`: the failed write's error; empty when the disk is nearly full (see SpaceShort).
void Recording::StopWriting(const std::string& why) {
  const bool no_space = why.empty() || writer_.NoSpace();
  const uint64_t free_bytes = writer_.FreeBytes();
  std::string what = no_space ? "disk full" : why;
  if (why.empty()) {
    what = "disk nearly full, the bundle needs about " + FormatBytes(writer_.BundleBytesNeeded()) +
           " to be written";
  }
  if (InTransaction()) (void)db_.Exec("ROLLBACK");
  writer_.ReleaseReserve();
  writing_ = false;
  ctx_.writes_failed = true;
  summary_.unwritten_reason = no_space ? "no_space" : "write_error";
  summary_.writing_stopped_ns = wall_->NowNs();
  uint64_t kept = 0;
  for (uint64_t n : committed_) kept += n;
  Log("%s: %s (%s free): stopped writing events; the bundle keeps "
      "the %llu committed until now, later ones are counted as dropped (%s)",
      writer_.temp_path().c_str(), what.c_str(), FormatBytes(free_bytes).c_str(),
      static_cast<unsigned long long>(kept), summary_.unwritten_reason.c_str());
  (void)db_.Exec("BEGIN");
}

void Recording::Commit() {
  if (!InTransaction()) {  // a failed write rolled the batch back
    StopWriting(sqlite3_errmsg(db_.raw()));
    return;
  }
  if (ring_) TrimRing();  // before the sources: they count the rows the ring still holds
  auto r = WriteSources(db_, node_.name, SnapshotSources());
  if (r.ok()) r = gate_->Exec("COMMIT");
  if (!r.ok()) {
    StopWriting(r.error().message());
    return;
  }
  for (size_t i = 0; i < probes_.size(); ++i) committed_[i] = EventsOf(i);
  if (writer_.SpaceShort()) {
    (void)db_.Exec("BEGIN");
    StopWriting("");
  } else if (auto b = db_.Exec("BEGIN"); !b.ok()) {
    StopWriting(b.error().message());
  }
}

void Recording::Loop() {
  FanOut();  // --pid processes
  // From here the kernel rings are emptied by the drain thread; rows are still decoded and
  // inserted on this thread, in WaitAndDispatch.
  if (auto r = poller_.StartDrainThread(); !r.ok()) {
    Log("%s; reading the rings on the main thread", r.error().message().c_str());
  }
  const int64_t t0 = rs::MonotonicNowNs();
  int64_t last_tick = t0, last_ref = t0, last_commit = t0, last_cut_poll = t0;
  uint64_t rows_at_commit = 0;
  for (;;) {
    if (const int signo = StopSignalReceived(); signo != 0) {
      summary_.stop_reason = signo == SIGTERM ? "SIGTERM" : "SIGINT";
      return;
    }
    int64_t now = rs::MonotonicNowNs();
    if (opts_.duration_ns && now - t0 >= *opts_.duration_ns) {
      summary_.stop_reason = "duration";
      return;
    }
    if (ring_ && ids_->count() >= kRingIdLimit) {
      // Event ids are 32-bit per recording: a ring that ran this long ends its recording
      // (the stop cut keeps the window); a supervisor (the systemd unit) starts a new one.
      Log("ring: %u events since the recording began, the most one recording numbers; "
          "ending it (a supervisor starts the next)",
          ids_->count());
      summary_.stop_reason = "event_ids";
      return;
    }
    int timeout = config_.poll_timeout_ms;
    if (opts_.duration_ns) {
      int64_t left_ms = (*opts_.duration_ns - (now - t0)) / 1'000'000 + 1;
      if (left_ms < timeout) timeout = static_cast<int>(left_ms);
    }
    poller_.WaitAndDispatch(timeout);
    FanOut();
    if (TakeCutRequest()) AnswerCutRequest();
    if (ring_ && rs::MonotonicNowNs() - last_cut_poll >= kCutDirPollNs) {
      last_cut_poll = rs::MonotonicNowNs();
      if (opts_.cut_on_stall_ns) WatchForStall();
      if (slowdown_) WatchForSlowdown();
      AnswerPostedRequests();
    }
    now = rs::MonotonicNowNs();
    if (now - last_tick >= config_.tick_period_ns) {
      last_tick = now;
      for (size_t i = 0; i < probes_.size(); ++i) {
        if (started_[i]) probes_[i]->Tick(ctx_);
      }
      FanOut();
    }
    if (now - last_ref >= config_.clock_ref_period_ns) {
      last_ref = now;
      (void)TakeRef("periodic");  // a failed write shows at the commit
    }
    if (!writing_) {  // this round's rows go
      if (InTransaction()) (void)db_.Exec("ROLLBACK");
      (void)db_.Exec("BEGIN");
      continue;
    }
    uint64_t rows = TotalEvents();
    if (!InTransaction() || rows - rows_at_commit >= config_.commit_rows ||
        now - last_commit >= config_.commit_period_ns) {
      Commit();
      rows_at_commit = rows;
      last_commit = now;
    }
  }
}

void Recording::Finish() {
  // Back to reading the rings on this thread; detach and drain every probe.
  ctx_.finishing = true;  // from here no probe attaches anything new
  if (!writing_) {
    // What the probes write while finishing (the rings' last records, calls in flight,
    // counters) is kept if it fits in the space released.
    if (InTransaction()) (void)db_.Exec("ROLLBACK");
    (void)db_.Exec("BEGIN");
  }
  before_finish_.resize(probes_.size());
  for (size_t i = 0; i < probes_.size(); ++i) before_finish_[i] = EventsOf(i);
  poller_.StopDrainThread();
  for (size_t i = 0; i < probes_.size(); ++i) {
    if (!started_[i]) continue;
    auto r = probes_[i]->Finish(ctx_);
    if (!r.ok()) {
      sources_[i].note = "finish: " + r.error().message();
      Log("%s: %s", sources_[i].source.c_str(), r.error().message().c_str());
    }
  }
  end_ref_ = TakeRef("end");
  summary_.end_ns = refs_.back().realtime_ns;
}

rs::Result<void> Recording::WriteEnd(bool finish_rows) {
  RETURN_IF_ERROR(end_ref_);
  if (ring_) RETURN_IF_ERROR(PrepareStopCut());
  summary_.sources = SnapshotSources();
  summary_.events = summary_.drops = summary_.unwritten = 0;
  std::vector<std::pair<std::string, std::string>> meta = {
      {"end_ns", std::to_string(summary_.end_ns)}, {"stop_reason", summary_.stop_reason}};
  for (size_t i = 0; i < probes_.size(); ++i) {
    SourceSummary& s = summary_.sources[i];
    if (!writing_) {
      const uint64_t unwritten = (finish_rows ? before_finish_[i] : EventsOf(i)) - committed_[i];
      s.events -= unwritten;
      s.drops += unwritten;
      summary_.unwritten += unwritten;
      if (started_[i]) {
        meta.emplace_back(s.source + "_drops_" + summary_.unwritten_reason,
                          std::to_string(unwritten));
      }
    }
    summary_.events += s.events;
    summary_.drops += s.drops;
  }
  if (!writing_) {
    meta.emplace_back("writing_stopped_ns", std::to_string(summary_.writing_stopped_ns));
    meta.emplace_back("writing_stopped_reason", summary_.unwritten_reason);
  }
  RETURN_IF_ERROR(WriteSources(db_, node_.name, summary_.sources));
  for (const auto& [k, v] : meta) RETURN_IF_ERROR(writer_.SetMetadata(k, v));
  if (!InTransaction()) return rs::Error("the transaction was rolled back");
  return gate_->Exec("COMMIT");
}

rs::Result<RecordingSummary> Recording::End() {
  rs::Result<void> ended = InTransaction() ? WriteEnd(true) : rs::Error(sqlite3_errmsg(db_.raw()));
  if (!ended.ok()) {
    // Without what finishing wrote: the summary alone (the probes' rows since the last commit
    // are counted as dropped).
    if (writing_) {
      StopWriting(ended.error().message());
    } else {
      if (InTransaction()) (void)db_.Exec("ROLLBACK");
      (void)db_.Exec("BEGIN");
    }
    end_ref_ = WriteClockRef(*ref_insert_, node_.name, ref_seq_++, refs_.back());
    ended = WriteEnd(false);
    if (!ended.ok()) {
      if (InTransaction()) (void)db_.Exec("ROLLBACK");
      return ended.error().Wrap("cannot write the end of the recording");
    }
  }
  gate_.reset();  // finalizing commits on its own
  RETURN_IF_ERROR(writer_.Finalize(/*with_indexes=*/summary_.unwritten_reason != "no_space"));
  if (ring_) {
    AppendCutLog(opts_.ring_dir, writer_.out_path());
    KeepCutsUnderCap();
  }
  return summary_;
}

}  // namespace rs::rec
