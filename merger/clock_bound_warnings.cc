#include "clock_bound_warnings.h"

#include <algorithm>

#include "rscore/duration.h"
#include "rscore/schema.h"

namespace merge {
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
    ASSIGN_OR_RETURN(v, Column(merged, std::string("SELECT duration_ns FROM nccl_events"
                                                   " WHERE duration_ns >= 0"
                                                   " AND state = 'complete'") +
                                           kCollectiveOps));
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
    out.push_back("node " + a.node + ": its clock error bound (+-" +
                  rs::FormatDuration(a.error_bound_ns) +
                  ") exceeds the median duration of the recording's collectives (" +
                  rs::FormatDuration(durations.median_ns) + ", " +
                  (durations.source == "device" ? "on the device" : "of the NCCL calls") +
                  ", over " + std::to_string(durations.count) +
                  "): lateness differences smaller than the bound cannot be ordered across "
                  "nodes");
  }
  return out;
}

}  // namespace merge
