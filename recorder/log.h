// The recorder's log: one line per call on standard error, prefixed with the tool's name
// ("rankscope-record: ..."), written from one place. Every part of the recorder logs through
// it; tests can send the lines elsewhere.
#pragma once

#include <cstdio>

namespace rec {

// printf-style, without the prefix and without the final newline.
void Log(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Where Log writes (standard error until set); returns the previous sink.
FILE* SetLogSink(FILE* sink);

}  // namespace rec
