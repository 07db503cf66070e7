#include "rscore/cli.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace rs::cli {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string Errno() { return std::strerror(errno); }

}  // namespace

std::string RankRanges(const std::vector<int64_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

bool NaturalLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (IsDigit(a[i]) && IsDigit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && IsDigit(a[ie])) ++ie;
      while (je < b.size() && IsDigit(b[je])) ++je;
      // Compare the numbers without converting (any length): skip leading zeros, then the
      // longer run is larger, then digit by digit.
      size_t iz = i, jz = j;
      while (iz + 1 < ie && a[iz] == '0') ++iz;
      while (jz + 1 < je && b[jz] == '0') ++jz;
      if (ie - iz != je - jz) return ie - iz < je - jz;
      const int c = a.substr(iz, ie - iz).compare(b.substr(jz, je - jz));
      if (c != 0) return c < 0;
      if (ie - i != je - j) return ie - i < je - j;  // node01 before node001: stable, total
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

std::vector<std::string> SplitList(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    std::string cur;
    for (char c : v + ",") {
      if (c == ',') {
        if (!cur.empty()) out.push_back(cur);
        cur.clear();
      } else if (c != ' ' && c != '\t' && c != '\n') {
        cur += c;
      }
    }
  }
  return out;
}

rs::Result<std::string> ReadStdin(size_t max_bytes) {
  std::string out;
  char buf[1 << 14];
  for (;;) {
    const ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return rs::Error("cannot read standard input: " + Errno());
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      return rs::Error("standard input is longer than " + std::to_string(max_bytes) + " bytes");
    }
  }
  return out;
}

Progress::Progress(bool quiet) : on_(!quiet && isatty(STDERR_FILENO)) {}

Progress::~Progress() { Done(); }

void Progress::Show(const std::string& line) {
  if (!on_) return;
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void Progress::Done() {
  if (!shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

std::string FormatElapsed(int64_t ns) {
  char buf[32];
  if (ns < 1'000'000'000) {
    std::snprintf(buf, sizeof(buf), "%lld ms", static_cast<long long>(ns / 1'000'000));
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f s", static_cast<double>(ns) / 1e9);
  }
  return buf;
}

std::string WithHelpHint(std::string_view message, std::string_view command) {
  return std::string(message) + " (see '" + std::string(command) + " --help')";
}

std::string WroteLine(std::string_view shown, std::string_view what, int64_t elapsed_ns) {
  return "wrote " + std::string(shown) + ": " + std::string(what) + " in " +
         FormatElapsed(elapsed_ns);
}

}  // namespace rs::cli
