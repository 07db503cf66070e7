#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rscore/result.h"

namespace rs {

// Parses "500ms", "30s", "2m", "1h", "250us", "100ns" (a bare number means seconds)
// into nanoseconds. Zero and negative durations are errors.
Result<int64_t> ParseDuration(std::string_view text);

// Formats nanoseconds for people: "1.50 ms", "2.00 s".
std::string FormatDuration(int64_t ns);

}  // namespace rs
