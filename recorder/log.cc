#include "recorder/log.h"

#include <cstdarg>
#include <string>

namespace rec {
namespace {

FILE* g_sink = nullptr;  // null: stderr
bool g_quiet = false;

void Write(const std::string& text) {
  std::fputs(text.c_str(), g_sink ? g_sink : stderr);  // one write: lines from threads stay whole
}

std::string Format(const char* format, va_list args) {
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string text(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(text.data(), text.size() + 1, format, args);
  return text;
}

}  // namespace

void Log(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::string line = "rankscope-record: " + Format(format, args) + "\n";
  va_end(args);
  Write(line);
}

void LogInfo(const char* format, ...) {
  if (g_quiet) return;
  va_list args;
  va_start(args, format);
  std::string line = "rankscope-record: " + Format(format, args) + "\n";
  va_end(args);
  Write(line);
}

void SetQuiet(bool quiet) { g_quiet = quiet; }

void LogAsIs(const char* format, va_list args) { Write(Format(format, args)); }

FILE* SetLogSink(FILE* sink) {
  FILE* old = g_sink;
  g_sink = sink;
  return old;
}

}  // namespace rec
