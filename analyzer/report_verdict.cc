#include "analyzer/report_verdict.h"

#include <algorithm>

#include "analyzer/confidence.h"
#include "analyzer/report_format.h"

namespace rs::analyzer {
namespace {

// Whether the recording could not see a slow GPU: its NCCL calls only enqueue and no device
// arrival was recorded, so lateness is when each host issued the collective, and a rank whose
// GPU runs 4x slower (the test bed's 'slow' fault without the plugin: the job's steps/s fell
// from 12.5 to 7.1) looks as early as the others.
bool DeviceUnseen(const Report& r) {
  return r.timing.call_semantics == "enqueue" && r.timing.device_collectives == 0 &&
         r.collectives > 0;
}

}  // namespace

// The first line of every format and its kind (Report::verdict_kind).
void SetVerdict(Report& r, const std::vector<ArrivalStats>& stats) {
  auto set = [&](const char* kind, std::string text) {
    r.verdict_kind = kind;
    r.verdict = std::move(text);
  };
  if (r.hang.detected) return set("hang", "HANG: " + r.hang.summary);
  if (r.nccl_calls == 0 && r.flight_recorder) {  // dumps only: their verdict
    // And who entered collectives last by them (fr_lateness.h), which is all they say of pace.
    std::string late;
    for (const FrLateEntry& l : r.flight_recorder->late_entries) {
      late += (late.empty() ? "; by the dumps, " : "; ") + l.label + " entered " +
              std::to_string(l.last) + " of its " + std::to_string(l.collectives) +
              " collectives last (a median " + FormatNs(l.median_behind_ns) + " behind)";
    }
    if (r.hang.kind == "undetermined")
      return set("undetermined", "UNDETERMINED: " + r.hang.summary + late);
    return set("no_hang", "NO HANG: " + r.hang.summary + late);
  }
  if (r.nccl_calls == 0 && r.unidentified_calls > 0) {
    return set(
        "undetermined",
        "UNDETERMINED (communicators not identified): " + std::to_string(r.unidentified_calls) +
            " NCCL call(s) on " + std::to_string(r.unidentified_nodes) +
            " node(s), all of communicators created before the recorder started, which "
            "it cannot match across ranks: no straggler or hang can be told; record from "
            "before the job creates its communicators (rankscope-record --ring)");
  }
  if (r.nccl_calls == 0) {
    return set("no_collectives",
               "NO COLLECTIVES: the recording has no NCCL collectives; straggler and hang "
               "analysis need them");
  }
  for (const Straggler& s : r.stragglers) {
    if (AtLeastMedium(s.confidence)) {
      return set("straggler", "STRAGGLER: " + s.node +
                                  (s.rank ? " rank " + std::to_string(*s.rank) : "") + " — cause " +
                                  s.cause + " (confidence " + ConfidenceName(s.confidence) +
                                  "): " + s.summary);
    }
  }
  // Below medium, a verdict left among the stragglers is one whose lateness the clocks cannot
  // order (AddClockBoundWarnings lowers those): the data cannot decide.
  for (const Straggler& s : r.stragglers) {
    if (!AtLeastMedium(s.confidence)) return set("undetermined", "UNDETERMINED: " + s.summary);
  }
  if (r.collectives == 0) {
    return set("no_collectives",
               "NO MATCHED COLLECTIVES: no collective was seen by two or more ranks");
  }
  int64_t worst_p90 = 0;
  for (const ArrivalStats& s : stats) worst_p90 = std::max(worst_p90, s.p90_lateness_ns);
  const std::string spread = FormatNs(worst_p90) + " of each other (worst p90) over " +
                             std::to_string(r.collectives) + " collectives";
  const std::string within =
      std::to_string(stats.size()) + " ranks' hosts issue the collectives within " + spread;
  if (r.timing.graph_replays_uncompared > 0 && r.timing.device_collectives == 0) {
    return set("undetermined",
               "UNDETERMINED (CUDA graph replays not compared): " +
                   std::to_string(r.timing.graph_replays_uncompared) +
                   " GPU operations of graph replays were recorded, but some node's graphs were "
                   "captured before its recorder read (metadata gpu_graph_calls_unrecorded), so "
                   "one replay number may name different replays on different ranks; start the "
                   "recorder before the job captures its graphs");
  }
  if (DeviceUnseen(r)) {
    return set("undetermined",
               "UNDETERMINED (GPU side not seen): " + within +
                   ", but these NCCL calls only enqueue and no device arrival was recorded, so "
                   "a rank whose GPU is slow would look as early as the others here; record with "
                   "rankscope's NCCL profiler plugin loaded (NCCL_PROFILER_PLUGIN, see "
                   "libnccl-profiler-rankscope(7)) to see it");
  }
  std::string v =
      "NO STRAGGLER: " + std::to_string(stats.size()) + " ranks arrive within " + spread;
  if (!r.observations.empty()) {
    v +=
        " (" + std::to_string(r.observations.size()) + " observation(s) below explain no lateness)";
  }
  set("no_straggler", std::move(v));
}

}  // namespace rs::analyzer
