// Stack dedup: stacks of every node stored once, keyed by the xxh64 of their symbolized
// frames text (recomputed here, never trusted from the input).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::merge {

// The stack id of a frames text: xxh64 (seed 0) as a signed 64-bit integer.
int64_t StackId(std::string_view frames);

struct StackCounts {
  int64_t rows_in = 0;   // stacks in the input
  int64_t inserted = 0;  // new in the merged db
  int64_t deduped = 0;   // already present (same frames from another node or input)
};

// Copies `schema`.stacks (an attached input) into main.stacks and fills the temporary table
// temp.stack_map(old INTEGER PRIMARY KEY, new INTEGER) with the input's id -> merged id.
rs::Result<StackCounts> MergeStacks(rs::Db& out, const std::string& schema);

// Inputs reach the merged db in an order chosen for speed, not in input order, so which input
// brought a stack first is decided from a record of which inputs hold which stacks
// (temp.stack_origins): a stack counts as inserted for the lowest input id holding it and as
// deduplicated for every other.
//
// Records that input `input_id` holds the merged stack ids returned by `ids_query` (one column).
rs::Result<void> RecordStackOrigins(rs::Db& db, int input_id, const std::string& ids_query);
// Input id -> number of stacks it was the first to hold.
rs::Result<std::map<int, int64_t>> StacksFirstHeld(rs::Db& db);

}  // namespace rs::merge
