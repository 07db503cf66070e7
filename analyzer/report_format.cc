#include "report_format.h"

#include <cmath>
#include <cstdio>

namespace analyzer {

std::string FormatNs(int64_t ns) {
  double v = static_cast<double>(ns);
  double a = std::fabs(v);
  const char* unit = "ns";
  if (a >= 1e9) {
    v /= 1e9;
    unit = "s";
  } else if (a >= 1e6) {
    v /= 1e6;
    unit = "ms";
  } else if (a >= 1e3) {
    v /= 1e3;
    unit = "us";
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g %s", v, unit);
  return buf;
}

std::string FormatPercent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", fraction * 100.0);
  return buf;
}

std::string FormatHash(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace analyzer
