#include "rscore/time_arg.h"

#include <time.h>

#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdio>

#include "rscore/duration.h"

namespace rs {

namespace {

// Reads exactly `digits` decimal digits at text[pos].
bool Digits(std::string_view text, size_t& pos, int digits, int& out) {
  if (pos + static_cast<size_t>(digits) > text.size()) return false;
  out = 0;
  for (int i = 0; i < digits; ++i) {
    const char c = text[pos + static_cast<size_t>(i)];
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  pos += static_cast<size_t>(digits);
  return true;
}

bool Expect(std::string_view text, size_t& pos, char c) {
  if (pos >= text.size() || text[pos] != c) return false;
  ++pos;
  return true;
}

}  // namespace

Result<int64_t> ParseUtc(std::string_view text) {
  const std::string shown(text);
  const Error bad("'" + shown +
                  "': not an ISO 8601 time (use e.g. 2026-11-25T11:38:01.5Z; without a zone, "
                  "UTC is meant)");
  size_t pos = 0;
  int year, month, day, hour, minute, second = 0;
  if (!Digits(text, pos, 4, year) || !Expect(text, pos, '-') || !Digits(text, pos, 2, month) ||
      !Expect(text, pos, '-') || !Digits(text, pos, 2, day)) {
    return bad;
  }
  if (pos >= text.size() || (text[pos] != 'T' && text[pos] != 't' && text[pos] != ' ')) return bad;
  ++pos;
  if (!Digits(text, pos, 2, hour) || !Expect(text, pos, ':') || !Digits(text, pos, 2, minute)) {
    return bad;
  }
  int64_t fraction_ns = 0;
  if (pos < text.size() && text[pos] == ':') {
    ++pos;
    if (!Digits(text, pos, 2, second)) return bad;
    if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
      ++pos;
      int64_t scale = 100'000'000;
      size_t n = 0;
      while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
        if (n < 9) fraction_ns += (text[pos] - '0') * scale;
        scale /= 10;
        ++pos;
        ++n;
      }
      if (n == 0) return bad;
    }
  }
  int64_t zone_s = 0;
  if (pos < text.size()) {
    const char z = text[pos];
    if (z == 'Z' || z == 'z') {
      ++pos;
    } else if (z == '+' || z == '-') {
      ++pos;
      int zh, zm = 0;
      if (!Digits(text, pos, 2, zh)) return bad;
      if (pos < text.size() && text[pos] == ':') ++pos;
      if (pos < text.size() && !Digits(text, pos, 2, zm)) return bad;
      zone_s = (z == '+' ? 1 : -1) * (zh * 3600 + zm * 60);
    }
  }
  if (pos != text.size()) return bad;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return bad;
  }
  struct tm tm {};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const time_t t = timegm(&tm);
  if (tm.tm_mday != day) return bad;  // normalized: a day the month does not have
  // Every time is nanoseconds since the epoch in 64 bits: 9999-01-01 would wrap to 1816 and
  // select (or list) a window nobody asked for. Refused instead, naming the range.
  int64_t s = static_cast<int64_t>(t) - zone_s;
  if (s < 0 && fraction_ns > 0) {  // the earliest second holds only its later nanoseconds
    s += 1;
    fraction_ns -= 1'000'000'000;
  }
  int64_t ns = 0;
  if (__builtin_mul_overflow(s, int64_t{1'000'000'000}, &ns) ||
      __builtin_add_overflow(ns, fraction_ns, &ns)) {
    return Error("'" + shown + "': outside the times this can hold (" + FormatUtc(INT64_MIN) +
                 " to " + FormatUtc(INT64_MAX) + ": nanoseconds since 1970 in 64 bits)");
  }
  return ns;
}

std::string FormatUtc(int64_t ns) {
  int64_t s = ns / 1'000'000'000, frac = ns % 1'000'000'000;
  if (frac < 0) {
    frac += 1'000'000'000;
    --s;
  }
  const time_t t = static_cast<time_t>(s);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(frac));
  return buf;
}

Result<TimeArg> ParseTimeArg(std::string_view text, std::string_view flag) {
  const std::string shown = std::string(flag) + " '" + std::string(text) + "'";
  if (text.empty()) return Error(shown + ": empty");
  if (text[0] == '+') {
    std::string_view rest = text.substr(1);
    if (rest.find_first_not_of("0.") == std::string_view::npos && !rest.empty()) {
      return TimeArg{true, 0};  // "+0", "+0.0"
    }
    auto d = ParseDuration(rest);
    if (!d.ok()) return d.error().Wrap(shown);
    return TimeArg{true, *d};
  }
  if (text.find('-') != std::string_view::npos || text.find(':') != std::string_view::npos) {
    auto t = ParseUtc(text);
    if (!t.ok()) return t.error().Wrap(std::string(flag));
    return TimeArg{false, *t};
  }
  int64_t ns = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ns);
  if (ec != std::errc() || end != text.data() + text.size() || ns < 0) {
    return Error(shown +
                 ": not a time (use an ISO 8601 UTC time like 2026-11-25T11:38:01.5Z, "
                 "nanoseconds since the epoch, or an offset from the recording's start like "
                 "+1.5s)");
  }
  // Nanoseconds since the epoch have 19 digits today; a bare number below 10^17 (before
  // 1973-03-03 as nanoseconds) is almost surely seconds, milliseconds or microseconds, which
  // read as nanoseconds would silently select the first seconds of 1970.
  if (ns > 0 && ns < 100'000'000'000'000'000) {
    const char* unit = ns < 100'000'000'000 ? "seconds" : ns < 100'000'000'000'000 ? "milliseconds"
                                                                                     : "microseconds";
    const int64_t scale = ns < 100'000'000'000 ? 1'000'000'000
                          : ns < 100'000'000'000'000 ? 1'000'000 : 1'000;
    return Error(shown + ": looks like " + unit + " since the epoch, but a bare number is " +
                 "nanoseconds (it would be " + FormatUtc(ns) + "); give " +
                 std::to_string(ns) + std::string(std::to_string(scale).size() - 1, '0') +
                 " (nanoseconds), an ISO 8601 UTC time like " + FormatUtc(ns * scale) +
                 ", or an offset from the recording's start like +1.5s");
  }
  return TimeArg{false, ns};
}

}  // namespace rs
