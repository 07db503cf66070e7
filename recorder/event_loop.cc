#include "recorder/event_loop.h"

#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include "common.h"
#include "recorder/attach_log.h"
#include "recorder/interfaces.h"
#include "recorder/library_discovery.h"
#include "recorder/log.h"
#include "recorder/process_table.h"
#include "recorder/recording_db.h"
#include "recorder/ring.h"
#include "recorder/ring_poller.h"
#include "recorder/sched_probe.h"
#include "rscore/clock.h"
#include "rscore/duration.h"
#include "rscore/event_id.h"
#include "rscore/path.h"

namespace rec {
namespace {

std::atomic<int> g_stop_signal{0};
std::atomic<bool> g_cut_requested{false};

extern "C" void OnStopSignal(int signo) { g_stop_signal.store(signo); }
extern "C" void OnCutSignal(int) { g_cut_requested.store(true); }

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

// One recording, in phases: Begin (start clock reference, metadata, interfaces, --pid) ->
// StartProbes -> Loop (poll, tick, clock references, batch commits) -> Finish (drain the
// probes) -> End (sources, end metadata, bundle). The state every phase shares lives here.
class Recording {
 public:
  Recording(const RecorderOptions& opts, const LoopConfig& config, const rs::NodeName& node,
            RecordingDb& writer, std::vector<std::unique_ptr<Probe>>& probes)
      : opts_(opts),
        config_(config),
        node_(node),
        writer_(writer),
        db_(writer.db()),
        probes_(probes),
        sources_(probes.size()),
        started_(probes.size(), false),
        committed_(probes.size(), 0) {
    summary_.recording_id = rs::NewRecordingId();
  }

  rs::Result<void> Begin();
  // Starts every probe; an error when none could start (no bundle then).
  rs::Result<void> StartProbes();
  // Records until the duration ends or a stop signal comes.
  void Loop();
  // Detaches and drains every probe, takes the end reference.
  void Finish();
  // Writes the sources and the end metadata, and turns the database into the bundle.
  rs::Result<RecordingSummary> End();

 private:
  rs::Result<void> TakeRef(const char* kind);
  rs::Result<void> WriteMetadataAtStart();
  void SetUpContext();
  uint64_t EventsOf(size_t i) const { return started_[i] ? probes_[i]->events() : 0; }
  uint64_t TotalEvents() const;
  // Hands the pids that exec'd or were newly chosen for tracing to every probe.
  void FanOut();
  // The sources table as of now. Written with every commit, so that a recording recovered
  // after the recorder died has it too; rewritten at the end.
  std::vector<SourceSummary> SnapshotSources() const;
  bool InTransaction() const { return sqlite3_get_autocommit(db_.raw()) == 0; }
  void Commit();
  void StopWriting(const std::string& why);
  // The end of the recording, in one transaction: sources, end metadata, and the rows the
  // probes wrote while finishing unless `finish_rows` is false (they were rolled back).
  rs::Result<void> WriteEnd(bool finish_rows);
  // --ring: the rows older than the window go at every commit; a cut request is answered
  // between two rounds of the loop.
  void TrimRing();
  void AnswerCutRequest();
  void AnswerPostedRequests();
  // --cut-keep: this node's oldest cuts go.
  void KeepCutsUnderCap();
  // --cut-on-stall: a call in flight for longer than that posts a cut request, once per call.
  void WatchForStall();
  // --cut-on-slowdown: the collectives recorded (NCCL calls, device operations) per window.
  void WatchForSlowdown();
  // Posts a request for a cut of `reason` (or joins one) and answers it here.
  void CutBecause(const char* reason);
  void CutFor(const CutRequest& req);
  CutInfo MakeCutInfo(const char* reason);
  rs::Result<void> PrepareStopCut();

  const RecorderOptions& opts_;
  const LoopConfig& config_;
  const rs::NodeName& node_;
  RecordingDb& writer_;
  rs::Db& db_;
  std::vector<std::unique_ptr<Probe>>& probes_;
  RecordingSummary summary_;
  std::optional<rs::EventIdAllocator> ids_;
  std::optional<rs::WallClock> wall_;
  rs::MonoToWall mono_to_wall_;
  std::vector<rs::ClockRef> refs_;
  std::optional<rs::Statement> ref_insert_;  // each reference is written as it is taken
  int64_t ref_seq_ = 0;
  std::optional<uint64_t> own_netns_;
  uint64_t scope_netns_ = 0;
  std::optional<AttachLog> attach_log_;
  std::optional<ProcessTable> processes_;
  // The shared poller goes before the probes whose maps it polls, on every return path
  // (the probes live in the EventLoop, which outlives the recording).
  RingPoller poller_;
  std::optional<ProcLibraryMaps> library_maps_;
  RecorderContext ctx_;
  std::optional<CommitGate> gate_;
  std::vector<SourceSummary> sources_;
  std::vector<bool> started_;
  // Writing stops for good at the first write that fails (a full disk): the batch being
  // written is rolled back, and from then on every round's rows are rolled back too; each
  // source's rows not committed are counted as dropped (metadata <source>_drops_no_space, or
  // _write_error). The reserve is released so that the bundle can still be written.
  std::vector<uint64_t> committed_;  // each source's rows at the last commit
  bool writing_ = true;
  std::vector<uint64_t> before_finish_;  // each source's rows when finishing began
  rs::Result<void> end_ref_ = rs::Ok();
  std::optional<Ring> ring_;
  std::set<std::string> answered_;  // cut ids this recording has cut for
  int64_t stall_cut_for_ = 0;       // entry time of the call in flight the last stall cut was for
  std::optional<SlowdownWatch> slowdown_;
};

// Cut requests within this much of each other are one cut (overlapping windows).
constexpr int64_t kJoinCutsNs = int64_t{10} * 1'000'000'000;
// A ring's recording ends after this many events (32-bit event ids, with room for the rows
// the end writes): at 3,000 events a second, after 16 days.
constexpr uint32_t kRingIdLimit = 0xFFF00000u;
// How often the cut directory is read for other nodes' requests.
constexpr int64_t kCutDirPollNs = 500'000'000;

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
  Log("recording node %s (%zu of %zu sources%s) -> %s", node_.name.c_str(), n_started,
      probes_.size(), left_out.c_str(), writer_.out_path().c_str());
  return rs::Ok();
}

uint64_t Recording::TotalEvents() const {
  uint64_t n = 0;
  for (size_t i = 0; i < probes_.size(); ++i) n += EventsOf(i);
  return n;
}

void Recording::FanOut() {
  std::vector<int> execs;
  execs.swap(ctx_.exec_pids);
  for (int pid : execs) {
    for (size_t i = 0; i < probes_.size(); ++i) {
      if (started_[i]) probes_[i]->OnProcessExec(ctx_, pid);
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

void Recording::TrimRing() {
  const int64_t now = wall_->NowNs();
  ring_->Checkpoint(now, ids_->count());
  if (auto r = ring_->Trim(db_, now); !r.ok()) {
    Log("ring: cannot delete the rows older than the window: %s", r.error().message().c_str());
  }
}

CutInfo Recording::MakeCutInfo(const char* reason) {
  CutInfo info;
  info.reason = reason;
  info.node = node_.name;
  info.cut_ns = wall_->NowNs();
  info.recording_start_ns = summary_.start_ns;
  return info;
}

// SIGUSR1 or `rankscope-record cut`: a request in the cut directory (or one posted by
// another node moments ago, which this cut joins), answered here at once.
void Recording::AnswerCutRequest() {
  if (!ring_) {
    Log("SIGUSR1: cuts are made in --ring mode only; ignored");
    return;
  }
  auto req = PostCutRequest(CutDir(opts_), node_.name, wall_->NowNs(), "request", kJoinCutsNs);
  if (!req.ok()) {
    Log("cut: %s", req.error().message().c_str());
    AppendCutLog(opts_.ring_dir, "error: " + req.error().message());
    return;
  }
  CutInfo info = MakeCutInfo("request");
  info.cut_id = req->cut_id;
  const std::string path = CutPath(CutDir(opts_), info);
  if (answered_.count(req->cut_id) != 0 && access(path.c_str(), F_OK) == 0) {
    Log("cut: joins %s, requested by %s, already written here", req->cut_id.c_str(),
        req->node.c_str());
    AppendCutLog(opts_.ring_dir, path);
    return;
  }
  CutFor(*req);
}

// Requests other nodes posted in the cut directory since this recording began.
void Recording::AnswerPostedRequests() {
  for (const CutRequest& req : PendingCutRequests(CutDir(opts_), node_.name, summary_.start_ns)) {
    if (answered_.count(req.cut_id) == 0) CutFor(req);
  }
}

void Recording::KeepCutsUnderCap() {
  for (const std::string& gone : RotateCuts(CutDir(opts_), node_.name, opts_.cut_keep_bytes)) {
    Log("removed the cut %s (--cut-keep %s)", gone.c_str(), FormatBytes(opts_.cut_keep_bytes).c_str());
  }
}

void Recording::WatchForStall() {
  std::optional<int64_t> oldest;
  for (size_t i = 0; i < probes_.size(); ++i) {
    if (!started_[i]) continue;
    if (auto t = probes_[i]->OldestInFlightNs(); t && (!oldest || *t < *oldest)) oldest = t;
  }
  const int64_t now = rs::MonotonicNowNs();
  if (!oldest || now - *oldest < *opts_.cut_on_stall_ns || *oldest == stall_cut_for_) return;
  stall_cut_for_ = *oldest;
  Log("stall: a call has been in flight for %s (--cut-on-stall %s)",
      rs::FormatDuration(now - *oldest).c_str(),
      rs::FormatDuration(*opts_.cut_on_stall_ns).c_str());
  CutBecause("stall");
}

void Recording::WatchForSlowdown() {
  uint64_t ops = 0;
  for (size_t i = 0; i < probes_.size(); ++i) {
    const std::string_view source = probes_[i]->source();
    if (source == "nccl" || source == "gpu") ops += EventsOf(i);
  }
  if (!slowdown_->Feed(rs::MonotonicNowNs(), ops)) return;
  Log("slowdown: %llu collectives in the last 10 s against a median of %llu "
      "(--cut-on-slowdown %.2f)",
      static_cast<unsigned long long>(slowdown_->last_window_ops()),
      static_cast<unsigned long long>(slowdown_->median_ops()), *opts_.cut_on_slowdown);
  CutBecause("slowdown");
}

void Recording::CutBecause(const char* reason) {
  auto req = PostCutRequest(CutDir(opts_), node_.name, wall_->NowNs(), reason, kJoinCutsNs);
  if (!req.ok()) {
    Log("cut: %s", req.error().message().c_str());
    return;
  }
  if (answered_.count(req->cut_id) == 0) CutFor(*req);
}

void Recording::CutFor(const CutRequest& req) {
  answered_.insert(req.cut_id);  // once, written or not
  std::vector<Probe::CutRows> in_flight(probes_.size());
  if (writing_) Commit();  // every row decoded so far, and the ring trimmed to the window
  if (writing_) {
    // The calls in flight (a stall's evidence) go into the copy, and out of the ring after.
    for (size_t i = 0; i < probes_.size(); ++i) {
      if (started_[i]) in_flight[i] = probes_[i]->WriteInFlightForCut(ctx_);
    }
    auto r = WriteSources(db_, node_.name, SnapshotSources());
    if (r.ok()) r = gate_->Exec("COMMIT");  // VACUUM INTO runs outside a transaction
    if (!r.ok()) StopWriting(r.error().message());
  }
  // Writing stopped (a full disk): the cut is what was committed until then.
  if (!writing_ && InTransaction()) (void)db_.Exec("ROLLBACK");
  auto forget_in_flight = [&] {
    for (size_t i = 0; i < probes_.size(); ++i) {
      if (in_flight[i].rows == 0) continue;
      (void)db_.Exec("DELETE FROM " + std::string(EventTableOf(probes_[i]->source())) +
                     " WHERE id BETWEEN " + std::to_string(in_flight[i].first_id) + " AND " +
                     std::to_string(in_flight[i].last_id));
      probes_[i]->ForgetCutRows(in_flight[i].rows);
    }
  };
  CutInfo info = MakeCutInfo(req.reason.c_str());
  info.cut_id = req.cut_id;
  if (!writing_) {
    info.writing_stopped_ns = summary_.writing_stopped_ns;
    info.writing_stopped_reason = summary_.unwritten_reason;
  }
  info.requested_by = req.node;
  info.requested_ns = req.cut_ns;
  const rs::ClockRef end = wall_->TakeRef("end");
  const int64_t started = rs::MonotonicNowNs();
  auto cut = WriteCut(db_, CutDir(opts_), info, *ring_, end);
  if (cut.ok()) {
    Log("cut %s (requested by %s): %s in %s", req.cut_id.c_str(), req.node.c_str(), cut->c_str(),
        rs::FormatDuration(rs::MonotonicNowNs() - started).c_str());
    AppendCutLog(opts_.ring_dir, *cut);
    KeepCutsUnderCap();
  } else {
    Log("cut: %s", cut.error().message().c_str());
    AppendCutLog(opts_.ring_dir, "error: " + cut.error().message());
  }
  if (auto b = db_.Exec("BEGIN"); !b.ok()) {
    StopWriting(b.error().message());
    return;
  }
  forget_in_flight();
}

// At a stop, the live database itself becomes the cut: trimmed to the window, with the
// cut's metadata, finalized into CUT_DIR/CUT-ID/NODE.rsb.
rs::Result<void> Recording::PrepareStopCut() {
  TrimRing();
  const CutInfo info = MakeCutInfo("stop");
  RETURN_IF_ERROR(WriteCutMetadata(db_, info, *ring_));
  const std::string out = CutPath(CutDir(opts_), info);
  RETURN_IF_ERROR(MakeDirs(rs::DirOf(out)));
  writer_.set_out_path(out);
  return rs::Ok();
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
    if (g_stop_signal.load() != 0) {
      summary_.stop_reason = g_stop_signal.load() == SIGTERM ? "SIGTERM" : "SIGINT";
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
          "ending it (a supervisor starts the next)", ids_->count());
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
    if (g_cut_requested.exchange(false)) AnswerCutRequest();
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

}  // namespace

void InstallStopSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking poll returns at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = OnCutSignal;  // a cut (--ring); without a ring it is logged and ignored
  sigaction(SIGUSR1, &sa, nullptr);
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
  Recording recording(opts_, config_, node_, writer_, probes_);
  RETURN_IF_ERROR(recording.Begin());
  RETURN_IF_ERROR(recording.StartProbes());
  recording_began_ = true;
  recording.Loop();
  recording.Finish();
  return recording.End();
}

}  // namespace rec
