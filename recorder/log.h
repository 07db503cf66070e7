// The recorder's log: one line per call on standard error, prefixed with the tool's name
// ("rankscope-record: ..."), written from one place. Every part of the recorder logs through
// it; tests can send the lines elsewhere.
#pragma once

#include <cstdarg>
#include <cstdio>

namespace rs::rec {

// printf-style, without the prefix and without the final newline.
void Log(const char* format, ...) __attribute__((format(printf, 1, 2)));
// An informational line (the start, the final summary, cuts): as Log, but not under -q
// (SetQuiet). Warnings and errors go through Log.
void LogInfo(const char* format, ...) __attribute__((format(printf, 1, 2)));
// -q: LogInfo writes nothing.
void SetQuiet(bool quiet);
// Text that carries its own prefix and newline (libbpf's messages), to the same sink.
void LogAsIs(const char* format, va_list args);

// Where Log writes (standard error until set); returns the previous sink.
FILE* SetLogSink(FILE* sink);

}  // namespace rs::rec
