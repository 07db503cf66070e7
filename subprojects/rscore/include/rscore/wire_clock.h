// A node's clock measured over the network against the workstation's, NTP-style: the
// workstation notes its send time t0, the node answers with its own wall-clock time s, the
// workstation notes the receive time t3. The node read its clock at some instant between t0
// and t3 (workstation time), so its offset (node clock minus workstation clock) lies in
// [s - t3, s - t0]: estimated as s - (t0 + t3) / 2 with an error of at most (t3 - t0) / 2.
// Of several exchanges the one with the smallest round trip gives the tightest bound and is
// kept. The fleet tools measure it on every request (rankscope-fleet), store it beside
// collected bundles (clock_offsets.json, rscore/wire_clock_file.h) and rankscope-merge checks
// its rendezvous alignment against it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rs {

// One exchange: workstation send and receive times and the node's answer, all wall-clock
// nanoseconds since the epoch (each in its own machine's clock).
struct ClockExchange {
  int64_t sent_ns = 0;      // t0, workstation
  int64_t node_ns = 0;      // s, the node
  int64_t received_ns = 0;  // t3, workstation
};

struct WireClock {
  std::string node;
  std::string address;      // host:port it was measured at
  int64_t offset_ns = 0;    // node clock minus workstation clock
  int64_t bound_ns = 0;     // |true offset - offset_ns| <= bound_ns (half the round trip)
  int64_t rtt_ns = 0;       // the kept exchange's round trip
  int64_t measured_ns = 0;  // workstation time of the kept exchange (its midpoint)
  int exchanges = 0;        // how many were made
};

// The exchange with the smallest round trip; nullopt when there is none with t3 >= t0.
std::optional<WireClock> EstimateWireClock(const std::vector<ClockExchange>& exchanges);

// "+1.234 ms ±0.120 ms": an offset with its bound, for people.
std::string FormatWireClock(const WireClock& c);

}  // namespace rs
