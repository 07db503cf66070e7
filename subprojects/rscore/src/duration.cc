#include "rscore/duration.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace rs {

Result<int64_t> ParseDuration(std::string_view text) {
  std::string s(text);
  auto bad = [&](const std::string& why) {
    return Error("invalid duration '" + s + "': " + why +
                 " (use a number with a unit: 500ms, 30s, 2m, 1h)");
  };
  if (s.empty()) return bad("empty");
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return bad("does not start with a number");
  std::string num = s.substr(0, i);
  std::string unit = s.substr(i);
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !std::isfinite(v)) return bad("not a number");
  double scale = 0;
  if (unit.empty() || unit == "s")
    scale = 1e9;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "us")
    scale = 1e3;
  else if (unit == "ns")
    scale = 1;
  else if (unit == "m" || unit == "min")
    scale = 60e9;
  else if (unit == "h")
    scale = 3600e9;
  else
    return bad("unknown unit '" + unit + "'");
  double ns = v * scale;
  if (ns < 1) return bad("must be positive");
  if (ns > 9.0e18) return bad("too long");
  return static_cast<int64_t>(std::llround(ns));
}

std::string FormatDuration(int64_t ns) {
  char buf[64];
  double a = std::fabs(static_cast<double>(ns));
  if (a >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
  else if (a >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  else if (a >= 1e3)
    std::snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  return buf;
}

}  // namespace rs
