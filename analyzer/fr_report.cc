// The Flight Recorder analysis folded into the report (fr_hang.h: AddFlightRecorder).
#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "analyzer/confidence.h"
#include "analyzer/fr_hang.h"
#include "rscore/cli.h"

namespace rs::analyzer {
namespace {

void LowerTo(std::optional<Confidence>& c, Confidence cap) {
  if (!c || static_cast<int>(*c) > static_cast<int>(cap)) c = cap;
}

// The dumps' culprits head the findings, at the hang's confidence.
void AddFrStragglers(Report& r) {
  std::vector<Straggler> hang;
  for (size_t i = 0; i < r.hang.culprit_ranks.size(); ++i) {
    hang.push_back(EngineStraggler(r.hang, i,
                                   "PyTorch Flight Recorder dumps: every rank's position in every "
                                   "process group, as a wait-for graph whose chains end at this "
                                   "rank"));
  }
  for (Straggler& s : hang) s.confidence = r.hang.confidence.value_or(s.confidence);
  r.stragglers.insert(r.stragglers.begin(), hang.begin(), hang.end());
}

}  // namespace

rs::Result<void> AddFlightRecorder(rs::Db& db, Report& r) {
  ASSIGN_OR_RETURN(FlightRecorderSummary fr, AnalyzeFlightRecorder(db));
  if (fr.dumps == 0) return rs::Ok();
  if (!fr.missing_ranks.empty()) {
    r.warnings.push_back("no Flight Recorder dump for rank(s) " +
                         rs::cli::RankRanges(fr.missing_ranks) +
                         ": their state is unknown to the Flight Recorder analysis");
  }
  if (fr.unaligned_dumps > 0 && r.nccl_calls > 0) {
    r.notes.push_back(std::to_string(fr.unaligned_dumps) +
                      " Flight Recorder dump(s) ran where no recording saw the rank: their times "
                      "are their host's wall clock, not aligned with the recording");
  }
  const bool recorder = r.hang.detected;
  bool replaced = false;  // r.hang is the dumps' (their mismatches with it)
  if (fr.hang.detected && recorder) {
    std::set<int64_t> a(r.hang.culprit_ranks.begin(), r.hang.culprit_ranks.end());
    std::set<int64_t> b(fr.hang.culprit_ranks.begin(), fr.hang.culprit_ranks.end());
    if (r.comms_per_rank > 1) {
      // Several groups per rank: the recording's analysis (hang.h) looks at one communicator
      // and names communicator ranks; the dumps' (wait_graph.h) follows the waiting chains
      // across every process group and names global ranks. The dumps' stands; whether they
      // agree is read from the labels (node and global rank).
      std::set<std::string> la(r.hang.culprit_labels.begin(), r.hang.culprit_labels.end());
      std::set<std::string> lb(fr.hang.culprit_labels.begin(), fr.hang.culprit_labels.end());
      // Unlike 'disagree' (both verdicts shown), only the dumps' stands: the recording's is
      // named in the warning.
      fr.agreement = la == lb ? "agree" : "flight_recorder_only";
      if (la != lb) {
        r.warnings.push_back(
            "the recording and the Flight Recorder dumps disagree on the hang: the recording's "
            "analysis of one communicator names its rank(s) " +
            rs::cli::RankRanges(std::vector<int64_t>(a.begin(), a.end())) +
            ", the dumps' waiting chains across every process group end at rank(s) " +
            rs::cli::RankRanges(std::vector<int64_t>(b.begin(), b.end())) +
            "; in a job whose ranks are in several groups the dumps' verdict is shown");
      }
      std::erase_if(r.stragglers, [](const Straggler& s) { return s.cause == "hang"; });
      r.hang = fr.hang;
      replaced = true;
      AddFrStragglers(r);
    } else if (a == b) {
      fr.agreement = "agree";
      r.notes.push_back("the Flight Recorder dumps agree with the recording on the hang: " +
                        fr.hang.summary);
    } else {
      fr.agreement = "disagree";
      r.warnings.push_back(
          "the recording and the Flight Recorder dumps disagree on the hang: "
          "the recording names rank(s) " +
          rs::cli::RankRanges(std::vector<int64_t>(a.begin(), a.end())) + " (" + r.hang.basis +
          "), the dumps rank(s) " + rs::cli::RankRanges(std::vector<int64_t>(b.begin(), b.end())) +
          "; both are shown and the confidence is lowered");
      LowerTo(r.hang.confidence, Confidence::kLow);
      for (Straggler& s : r.stragglers) {
        if (s.cause == "hang") {
          s.confidence = Confidence::kLow;
          s.confidence_score = TierScore(ScoreBasis::kHang, s.confidence, 0);
        }
      }
    }
  } else if (fr.hang.detected) {
    fr.agreement = "flight_recorder_only";
    r.hang = fr.hang;
    if (r.nccl_calls > 0) {
      // The recording saw the collectives and no stuck one: it may have ended before the hang.
      LowerTo(r.hang.confidence, Confidence::kMedium);
      r.notes.push_back(
          "the hang comes from the Flight Recorder dumps only: the recording has "
          "no collective stuck (it may have ended before the hang)");
    } else {
      r.notes.push_back(
          "hang analysis from PyTorch Flight Recorder dumps only (no recorder "
          "data on NCCL calls): states as PyTorch's watchdog saw them");
    }
    r.notes.push_back(
        "a Flight Recorder dump holds no time of its own: how long an operation was stuck is "
        "counted from its entry's creation to the latest time any dump holds (at least its "
        "timeout where PyTorch timed it out); the dumps were written later still");
    if (r.hang.confidence && *r.hang.confidence == Confidence::kMedium && r.hang.kind == "hang") {
      r.notes.push_back(
          "no entry of the waiting ranks shows a timeout: dumps taken on demand mid-step would "
          "show ranks at different positions too");
    }
    AddFrStragglers(r);
  } else if (recorder) {
    fr.agreement = "recorder_only";
    r.notes.push_back(
        "the Flight Recorder dumps show no stuck operation, unlike the recording "
        "(dumps written before the hang?)");
  } else {
    fr.agreement = "no_hang";
    // Dumps only: theirs is the only hang analysis there is, said as it is (undetermined too).
    if (r.nccl_calls == 0) {
      r.hang = fr.hang;
      replaced = true;
    }
  }
  r.notes.insert(r.notes.end(), fr.notes.begin(), fr.notes.end());
  for (const Mismatch& m : fr.hang.mismatches) {
    if (fr.agreement == "flight_recorder_only" || replaced) break;
    // A send/receive pair the recording's own engine listed already (same ranks, transfer
    // and field): said once.
    const bool listed =
        m.sender &&
        std::any_of(r.hang.mismatches.begin(), r.hang.mismatches.end(), [&](const Mismatch& x) {
          return x.sender == m.sender && x.receiver == m.receiver && x.seq == m.seq &&
                 x.field == m.field;
        });
    if (!listed) r.hang.mismatches.push_back(m);
  }
  r.flight_recorder = std::move(fr);
  return rs::Ok();
}

}  // namespace rs::analyzer
