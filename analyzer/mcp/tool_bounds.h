// How large a tool's result may grow. Each tool bounds its own lists (rows, events, ranks);
// on top of that no string is longer than kMaxStringChars and no result, serialized, longer than
// kMaxResultChars. Whatever is cut sets the result's `truncated` and a `hint` that says how to
// ask a narrower question.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "analyzer/mcp/json_rpc.h"

namespace rs::analyzer::mcp {

inline constexpr size_t kMaxStringChars = 4000;
inline constexpr size_t kMaxResultChars = 200000;
// Time limits of one call: the analyses (the report on a large recording takes minutes) and
// the quick look-ups (query, timeline, side events).
inline constexpr int64_t kAnalysisTimeLimitNs = int64_t{15} * 60 * 1000000000;
inline constexpr int64_t kLookupTimeLimitNs = int64_t{30} * 1000000000;

// Marks `result` (an object with `truncated`) as cut, keeping the first hint given.
void MarkTruncated(Json& result, const std::string& hint);

// `s` cut to at most `max_chars` bytes (not inside a UTF-8 sequence), with "..." at the end.
std::string CutString(const std::string& s, size_t max_chars);

// Applies the two bounds above to a finished result: long strings are cut, then the longest
// lists lose their tails until the whole fits. Returns whether anything was cut (and then
// marks the result).
bool FitResult(Json& result, const std::string& hint);

}  // namespace rs::analyzer::mcp
