#include "analyzer/report_format.h"

#include <cmath>
#include <cstdio>

#include "analyzer/report_model.h"

namespace rs::analyzer {

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

std::string FormatRatio(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2gx", ratio);
  return buf;
}

std::string FormatFixed1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string Spoken(const std::string& value) {
  if (value == "device_start") return "device start";
  if (value == "host_entry") return "host entry";
  std::string out = value;
  for (char& c : out) {
    if (c == '_') c = value == "host_bound" || value == "device_bound" ? '-' : ' ';
  }
  return out;
}

std::string ShapeSpoken(const std::string& shape) {
  return shape == "network" ? "network-bound" : Spoken(shape);
}

namespace {

// 'main+0x19 (/path/to/trainer@buildid+0x5b26)' -> 'main+0x19 (trainer)'.
std::string ShortFrame(const std::string& frame) {
  size_t open = frame.find(" (");
  if (open == std::string::npos) return frame;
  std::string file = frame.substr(open + 2);
  size_t end = file.find_first_of("@)");
  if (end != std::string::npos) file = file.substr(0, end);
  size_t slash = file.rfind('/');
  if (slash != std::string::npos) file = file.substr(slash + 1);
  return frame.substr(0, open) + " (" + file + ")";
}

}  // namespace

std::string CallerFrame(const std::string& stack) {
  size_t at = 0;
  std::string first;
  while (at < stack.size()) {
    size_t nl = stack.find('\n', at);
    if (nl == std::string::npos) nl = stack.size();
    std::string frame = stack.substr(at, nl - at);
    at = nl + 1;
    if (first.empty()) first = frame;
    size_t file = frame.find(" (");
    std::string in = file == std::string::npos ? "" : frame.substr(file + 2);
    size_t slash = in.rfind('/', in.find('@'));
    if (slash != std::string::npos) in = in.substr(slash + 1);
    if (in.rfind("libcuda", 0) != 0 && in.rfind("libnccl", 0) != 0) return ShortFrame(frame);
  }
  return ShortFrame(first);
}

std::string DescribeActivityLine(const Activity& a, int64_t time_zero_ns) {
  if (a.kind == "exit") {
    return "process exited" + (a.exit_code ? " with code " + std::to_string(*a.exit_code) : "") +
           " at +" + FormatNs(a.timestamp_ns - time_zero_ns);
  }
  std::string out = a.kind + " " + a.what;
  if (a.seq) out += " seq " + std::to_string(*a.seq);
  if (a.state == "in_flight") {
    out += " in flight since +" + FormatNs(a.timestamp_ns - time_zero_ns);
  } else {
    out += " returned at +" + FormatNs(a.timestamp_ns + a.duration_ns.value_or(0) - time_zero_ns);
  }
  if (!a.stack.empty()) out += ", called from " + CallerFrame(a.stack);
  return out;
}

}  // namespace rs::analyzer
