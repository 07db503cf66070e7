// One recording of the event loop (recorder/event_loop.h), in phases, and the state they
// share: internal to the recorder. recording.cc holds the phases, recording_cuts.cc the
// always-on ring's trimming and cuts (--ring).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "recorder/attach_log.h"
#include "recorder/event_loop.h"
#include "recorder/library_discovery.h"
#include "recorder/process_table.h"
#include "recorder/recording_db.h"
#include "recorder/ring.h"
#include "recorder/ring_poller.h"
#include "rscore/clock.h"
#include "rscore/event_id.h"

namespace rs::rec {

// The signal a stop was asked with (0: none yet), and whether a cut was asked for (SIGUSR1;
// taking it clears it). Set by the handlers of event_loop.cc.
int StopSignalReceived();
bool TakeCutRequest();

rs::Result<void> WriteSources(rs::Db& db, const std::string& node,
                              const std::vector<SourceSummary>& sources);

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

// Cut requests within this much of each other are one cut (overlapping windows).
constexpr int64_t kJoinCutsNs = int64_t{10} * 1'000'000'000;
// A ring's recording ends after this many events (32-bit event ids, with room for the rows
// the end writes): at 3,000 events a second, after 16 days.
constexpr uint32_t kRingIdLimit = 0xFFF00000u;
// How often the cut directory is read for other nodes' requests.
constexpr int64_t kCutDirPollNs = 500'000'000;

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
  std::set<std::string> answered_;  // cut ids this recording has cut for (or passed over)
  std::set<std::string> refused_;   // cut ids whose request was refused (logged once each)
  PostedCutLimit posted_cut_limit_;
  int64_t stall_cut_for_ = 0;       // entry time of the call in flight the last stall cut was for
  std::optional<SlowdownWatch> slowdown_;
};

}  // namespace rs::rec
