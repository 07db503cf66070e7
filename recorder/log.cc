#include "recorder/log.h"

#include <cstdarg>
#include <string>

#include "rscore/text_escape.h"

namespace rs::rec {
namespace {

FILE* g_sink = nullptr;  // null: stderr
bool g_quiet = false;

void Write(const std::string& text) {
  std::fputs(text.c_str(), g_sink ? g_sink : stderr);  // one write: lines from threads stay whole
}

// One line whatever the text holds: a newline, a carriage return or a terminal escape in a
// name the recorder logs (a library path, a process name, a file it found) is shown escaped,
// never acted on (rscore/text_escape.h), so that no line can be forged.
std::string Line(const std::string& text) {
  return "rankscope-record: " + rs::EscapeText(text) + "\n";
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
  std::string line = Line(Format(format, args));
  va_end(args);
  Write(line);
}

void LogInfo(const char* format, ...) {
  if (g_quiet) return;
  va_list args;
  va_start(args, format);
  std::string line = Line(Format(format, args));
  va_end(args);
  Write(line);
}

void SetQuiet(bool quiet) { g_quiet = quiet; }

void LogAsIs(const char* format, va_list args) {
  std::string text = Format(format, args);
  const bool newline = !text.empty() && text.back() == '\n';
  if (newline) text.pop_back();
  Write(rs::EscapeText(text) + (newline ? "\n" : ""));
}

FILE* SetLogSink(FILE* sink) {
  FILE* old = g_sink;
  g_sink = sink;
  return old;
}

}  // namespace rs::rec
