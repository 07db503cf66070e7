#include "merger/clock_bound_warnings.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "rscore/call_mode.h"
#include "rscore/duration.h"
#include "rscore/enqueue.h"
#include "rscore/schema.h"

namespace rs::merge {
namespace {

// Collectives only: they rendezvous every rank, which is what lateness compares.
constexpr const char* kCollectiveOps =
    " AND seq IS NOT NULL AND op NOT IN ('SEND', 'RECV', 'GROUP_START', 'GROUP_END')"
    " AND op NOT LIKE 'COMM%'";

rs::Result<std::vector<int64_t>> Column(rs::Db& db, const std::string& sql) {
  std::vector<int64_t> out;
  ASSIGN_OR_RETURN(rs::Statement st, db.Prepare(sql));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(st.Int(0));
  }
  return out;
}

}  // namespace

rs::Result<CollectiveDurations> MeasureCollectiveDurations(rs::Db& merged) {
  CollectiveDurations d;
  std::vector<int64_t> v;
  ASSIGN_OR_RETURN(const bool gpu_ops, rs::HasTable(merged, "gpu_ops"));
  if (gpu_ops) {
    ASSIGN_OR_RETURN(
        v, Column(merged, std::string("SELECT device_end_ns - device_start_ns FROM gpu_ops"
                                      " WHERE device_start_ns IS NOT NULL"
                                      " AND device_end_ns >= device_start_ns") +
                              kCollectiveOps));
    d.source = "device";
  }
  if (v.empty()) {
    // Whether each call only enqueues: its communicator's mode as the merge decided it
    // (call_modes, rscore/call_mode.h), else its process's GPU use.
    rs::CallModes modes;
    ASSIGN_OR_RETURN(auto stored, rs::ReadStoredCallModes(merged));
    if (stored) modes.communicators = std::move(*stored);
    std::vector<std::tuple<int64_t, std::string, int64_t>> undecided;  // comm, node, pid
    ASSIGN_OR_RETURN(
        rs::Statement calls,
        merged.Prepare(std::string("SELECT duration_ns, comm_id_hash, node, pid FROM nccl_events"
                                   " WHERE duration_ns >= 0 AND state = 'complete'") +
                       kCollectiveOps));
    while (true) {
      ASSIGN_OR_RETURN(bool row, calls.Step());
      if (!row) break;
      v.push_back(calls.Int(0));
      const int64_t comm = calls.IsNull(1) ? 0 : calls.Int(1);
      auto m = modes.communicators.find(comm);
      if (m == modes.communicators.end() || m->second.decision.mode == rs::CallMode::kByProcess) {
        undecided.emplace_back(comm, calls.Text(2), calls.Int(3));
      } else if (m->second.decision.mode == rs::CallMode::kEnqueue) {
        ++d.enqueued;
      }
    }
    if (!undecided.empty()) {  // only now: the scan of cuda_events it needs is costly
      ASSIGN_OR_RETURN(modes.gpu_processes, rs::EnqueuingProcesses(merged));
      for (const auto& [comm, node, pid] : undecided) d.enqueued += modes.Enqueues(comm, node, pid);
    }
    d.source = "call";
  }
  d.count = static_cast<int64_t>(v.size());
  if (v.empty()) return d;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  d.median_ns = *mid;
  return d;
}

std::vector<std::string> ClockBoundWarnings(const std::vector<NodeAlignment>& alignment,
                                            const CollectiveDurations& durations) {
  std::vector<std::string> out;
  if (durations.count == 0) return out;
  for (const NodeAlignment& a : alignment) {
    if (a.error_bound_ns <= durations.median_ns) continue;
    const std::string bound = "node " + a.node + ": its clock error bound (+-" +
                              rs::FormatDuration(a.error_bound_ns) + ")";
    const std::string tail =
        ": lateness differences smaller than the bound cannot be ordered across nodes";
    if (durations.source == "call" && 2 * durations.enqueued > durations.count) {
      out.push_back(bound + " exceeds the median duration of the recording's NCCL calls (" +
                    rs::FormatDuration(durations.median_ns) + ", over " +
                    std::to_string(durations.count) + "; " + std::to_string(durations.enqueued) +
                    " of them only enqueue a collective on a GPU stream, whose time on the "
                    "device was not recorded: no profiler plugin)" +
                    tail);
      continue;
    }
    // Device durations recorded: the report orders ranks on their device waits (each read on
    // one device clock) where arrivals cannot be, and says per verdict which it used.
    const std::string waits =
        durations.source == "device"
            ? " by arrival times; the report compares device waits (each on one device clock) "
              "there instead, and says so in each verdict it rests on them"
            : "";
    out.push_back(bound + " exceeds the median duration of the recording's collectives (" +
                  rs::FormatDuration(durations.median_ns) + ", " +
                  (durations.source == "device" ? "on the device" : "of the NCCL calls") +
                  ", over " + std::to_string(durations.count) + ")" + tail + waits);
  }
  return out;
}

}  // namespace rs::merge
