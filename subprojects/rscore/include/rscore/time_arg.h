// Times on the command line and in output, one convention for every tool:
//   an instant is given as wall-clock nanoseconds since the epoch (1764070681123456789), an
//   ISO 8601 UTC time (2026-11-25T11:38:01.5Z; without a zone: UTC), or +OFFSET from the
//   recording's start (+1.5s, +250ms, +0) -- the start in the metadata of the bundle or the
//   merged database, the zero of every +offset a tool prints;
//   an instant is printed as ISO 8601 UTC with nanoseconds (FormatUtc);
//   an instant outside what 64-bit nanoseconds since the epoch hold (before
//   1677-09-21T00:12:43.145224192Z, after 2262-04-11T23:47:16.854775807Z) is refused.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rscore/result.h"

namespace rs {

struct TimeArg {
  bool relative = false;  // +OFFSET from the recording's start
  int64_t ns = 0;
  // An offset past the last time 64-bit nanoseconds hold (+250y from 2026) is that time, the
  // end of everything, rather than a sum that wraps to 1677.
  int64_t Resolve(int64_t recording_start_ns) const {
    int64_t t = 0;
    if (!relative) return ns;
    return __builtin_add_overflow(recording_start_ns, ns, &t) ? (ns > 0 ? INT64_MAX : INT64_MIN)
                                                              : t;
  }
};

// `flag` names the option in errors ("--from").
Result<TimeArg> ParseTimeArg(std::string_view text, std::string_view flag);

// 2026-11-25T11:38:01.123456789Z
std::string FormatUtc(int64_t ns);
// YYYY-MM-DD[T ]HH:MM[:SS[.fraction]][Z|+00:00|+HH:MM|-HH:MM] -> ns since the epoch.
Result<int64_t> ParseUtc(std::string_view text);

}  // namespace rs
