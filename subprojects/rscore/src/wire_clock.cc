#include "rscore/wire_clock.h"

#include <cstdio>
#include <cstdlib>

namespace rs {

std::optional<WireClock> EstimateWireClock(const std::vector<ClockExchange>& exchanges) {
  std::optional<WireClock> best;
  for (const ClockExchange& e : exchanges) {
    if (e.received_ns < e.sent_ns) continue;  // the workstation's clock stepped back meanwhile
    const int64_t rtt = e.received_ns - e.sent_ns;
    if (best && rtt >= best->rtt_ns) continue;
    WireClock c;
    // t0 + rtt/2 without overflow (both near 2^60)
    c.measured_ns = e.sent_ns + rtt / 2;
    c.offset_ns = e.node_ns - c.measured_ns;
    c.rtt_ns = rtt;
    c.bound_ns = (rtt + 1) / 2;  // rounded up: the bound must hold
    best = c;
  }
  if (best) best->exchanges = static_cast<int>(exchanges.size());
  return best;
}

namespace {
std::string Ms(int64_t ns, bool sign) {
  char b[48];
  std::snprintf(b, sizeof b, sign ? "%+.3f ms" : "%.3f ms", static_cast<double>(ns) / 1e6);
  return b;
}
}  // namespace

std::string FormatWireClock(const WireClock& c) {
  return Ms(c.offset_ns, true) + " \u00b1" + Ms(c.bound_ns, false);
}

}  // namespace rs
