// clock_offsets.json: the wire clock offsets (rscore/wire_clock.h) `rankscope-fleet collect`
// measured for each node, stored beside the bundles it collected; `rankscope-merge` reads it
// when present and compares it with its rendezvous alignment. Workstation tools only
// (nlohmann-json).
//
//   {"format": "rankscope-wire-clocks", "version": 1,
//    "nodes": [{"node": "node1", "address": "10.0.0.1:7443", "offset_ns": -1200,
//               "bound_ns": 95, "rtt_ns": 190, "measured_ns": 1764070681123456789,
//               "exchanges": 5}, ...]}
#pragma once

#include <string>
#include <vector>

#include "rscore/result.h"
#include "rscore/wire_clock.h"

namespace rs {

inline constexpr const char* kWireClockFileName = "clock_offsets.json";

std::string EncodeWireClocks(const std::vector<WireClock>& clocks);
// Errors name what is wrong (not JSON, another format, a field missing or of the wrong type).
Result<std::vector<WireClock>> DecodeWireClocks(const std::string& text);

// Written to a temporary beside `path` and renamed into place.
Result<void> WriteWireClockFile(const std::string& path, const std::vector<WireClock>& clocks);
Result<std::vector<WireClock>> ReadWireClockFile(const std::string& path);

}  // namespace rs
