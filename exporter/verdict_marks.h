// What `rankscope-analyze report --format json` found, as marks on a trace track of its own
// (rankscope-export --report): the verdict as a slice over the whole trace, each collective a
// straggler's rank arrived last in as an instant at that arrival (stragglers[].late_arrivals),
// and a hang's stuck time as a slice to the end. So a user who opens the trace sees what the
// report says, where it happened.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rscore/result.h"

namespace rs::exporter {

struct VerdictMark {
  int64_t ts = 0;
  int64_t end = -1;  // slices: their end; -1: an instant
  std::string name;
  std::string node;  // the node it is about ('' for the verdict itself): --nodes keeps or drops it
  // Argument names are string literals (the trace writers keep them as views).
  std::vector<std::pair<const char*, std::string>> text_args;
  std::vector<std::pair<const char*, int64_t>> int_args;
};

struct VerdictMarks {
  std::string verdict;  // the report's first line
  std::vector<VerdictMark> marks;  // in time order
};

// Reads `path` (the report's JSON; '-' is not accepted) and checks it can be a report of the
// recording whose events span [first_ns, last_ns]: a recording's files carry no identity, and
// the report's start and end are widened by its calls, so the report's span must overlap the
// events' (a report of another day's recording is refused; one of another job recorded at the
// same time is not told apart). Errors name the file and what to do.
Result<VerdictMarks> ReadVerdictMarks(const std::string& path, int64_t first_ns, int64_t last_ns);

}  // namespace rs::exporter
