// A gpu_ops row's device times as every reader takes them: the merge's clock alignment, the
// report's device arrivals and its send/receive waits.
//
// The profiler plugin converts device timestamps to the host clock: a converted time is never
// earlier than the truth and at most clock_error_ns later (gpu_ops in rankscope-bundle(5)).
// Stored values are read once, alike everywhere:
//  - clock_error_ns NULL or negative (the plugin writes -1 where it has no bound): unbounded;
//  - device_end_ns without a device_start_ns, or before it: no device end (a row that says
//    its operation ended before it started states no duration).
#pragma once

#include <cstdint>
#include <optional>

namespace rs {

struct DeviceTimes {
  std::optional<int64_t> start_ns;
  std::optional<int64_t> end_ns;          // set only with start_ns, never before it
  std::optional<int64_t> clock_error_ns;  // nullopt: the conversion is unbounded
};

inline DeviceTimes ReadDeviceTimes(std::optional<int64_t> start_ns, std::optional<int64_t> end_ns,
                                   std::optional<int64_t> clock_error_ns) {
  DeviceTimes t;
  t.start_ns = start_ns;
  if (start_ns && end_ns && *end_ns >= *start_ns) t.end_ns = end_ns;
  if (clock_error_ns && *clock_error_ns >= 0) t.clock_error_ns = clock_error_ns;
  return t;
}

}  // namespace rs
