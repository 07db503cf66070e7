#include "recorder/log.h"

#include <cstdarg>
#include <string>

namespace rec {
namespace {

FILE* g_sink = nullptr;  // null: stderr

}  // namespace

void Log(const char* format, ...) {
  char buf[2048];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  std::string line = "rankscope-record: ";
  if (n > 0) line.append(buf, std::min<size_t>(static_cast<size_t>(n), sizeof buf - 1));
  line += '\n';
  std::fputs(line.c_str(), g_sink ? g_sink : stderr);  // one write: lines from threads stay whole
}

FILE* SetLogSink(FILE* sink) {
  FILE* old = g_sink;
  g_sink = sink;
  return old;
}

}  // namespace rec
