// Where one rank stands in one operation, in the order it moves through them, as a flight
// recorder keeps it. One definition for the recorder's decoders, the Flight Recorder reader
// and the analyses; the tables and the report's JSON hold the names.
//
//   not_enqueued  the rank never issued it (its record ends before it)
//   enqueued      issued, not seen started (Flight Recorder: 'scheduled'; NCCL's start is
//                 seen only with TORCH_NCCL_ENABLE_TIMING=1, so without it an operation running
//                 on the device is still 'scheduled')
//   started       seen started on the device, or a blocking call in flight
//   completed     seen completed (on the device, or a blocking call returned)
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace rs {

enum class OpState : uint8_t { kNotEnqueued, kEnqueued, kStarted, kCompleted };

std::string_view OpStateName(OpState s);

// 'not_enqueued' | 'enqueued' | 'started' | 'completed', and the Flight Recorder's own
// 'scheduled' (= enqueued); nullopt for anything else.
std::optional<OpState> OpStateFromName(std::string_view name);

}  // namespace rs
