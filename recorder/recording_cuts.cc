// The always-on ring of a recording (--ring): trimming at each commit, cuts on request, on a
// stall or a slowdown, answers to other nodes' requests, and the stop cut.
#include <unistd.h>

#include <algorithm>

#include "recorder/log.h"
#include "recorder/recording.h"
#include "rscore/duration.h"
#include "rscore/path.h"
#include "rscore/text_escape.h"

namespace rs::rec {

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
    LogInfo("cut: joins %s, requested by %s, already written here", req->cut_id.c_str(),
            req->node.c_str());
    AppendCutLog(opts_.ring_dir, path);
    return;
  }
  CutFor(*req);
}

// Requests other nodes posted in the cut directory since this recording began; the refused
// ones (see cut_dir.h) and those past the rate limit are logged once each and never cut for.
void Recording::AnswerPostedRequests() {
  const PendingRequests found = PendingCutRequests(CutDir(opts_), node_.name, summary_.start_ns);
  for (const RefusedRequest& r : found.refused) {
    if (refused_.insert(r.cut_id).second) {
      Log("cut request %s/%s refused: %s", CutDir(opts_).c_str(), rs::EscapeText(r.cut_id).c_str(),
          r.why.c_str());
    }
  }
  for (const CutRequest& req : found.pending) {
    if (answered_.count(req.cut_id) != 0) continue;
    if (!posted_cut_limit_.Allow(rs::MonotonicNowNs())) {
      answered_.insert(req.cut_id);
      Log("cut request %s from %s not answered: %zu cuts were made for other nodes' requests "
          "in the last 10 minutes, the most this recorder makes",
          req.cut_id.c_str(), req.node.c_str(), PostedCutLimit::kMaxCuts);
      continue;
    }
    CutFor(req);
  }
}

void Recording::KeepCutsUnderCap() {
  for (const std::string& gone : RotateCuts(CutDir(opts_), node_.name, opts_.cut_keep_bytes)) {
    LogInfo("removed the cut %s (--cut-keep %s)", gone.c_str(),
            FormatBytes(opts_.cut_keep_bytes).c_str());
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
  LogInfo("stall: a call has been in flight for %s (--cut-on-stall %s)",
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
  LogInfo(
      "slowdown: %llu collectives in the last 10 s against a median of %llu "
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
    LogInfo("cut %s (requested by %s): %s in %s", req.cut_id.c_str(), req.node.c_str(),
            cut->c_str(), rs::FormatDuration(rs::MonotonicNowNs() - started).c_str());
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
  RETURN_IF_ERROR(CutIdDir(CutDir(opts_), rs::BaseOf(rs::DirOf(out))));
  writer_.set_out_path(out);
  return rs::Ok();
}

}  // namespace rs::rec
