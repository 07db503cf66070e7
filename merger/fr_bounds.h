// The values of a Flight Recorder dump, bounded to what every reader of the merged database
// accepts. A reader (report, export, query, MCP, the fleet) refuses a text or blob over
// rs::kMaxValueBytes (4 MiB: SQLITE_LIMIT_LENGTH, Db::GuardInput), and SQLite applies the same
// limit to a row it builds to sort: a dump with one 300 MB string merged with exit 0 used to
// give a database that report refused as a whole, every other input's analysis with it. So
// the bounds hold at merge time, where the one dump can be named:
//   - a text value (names, descriptions, versions, thread names, profiling names, a stack's
//     frames) over kMaxFrValueBytes is cut there, at a character boundary, and ends in a
//     marker saying how long it was (kTruncatedMarker); each cut is listed in
//     Dump::truncated, which the merge turns into a warning naming the file, rank and field;
//   - nccl_comm_state (the communicators' state, opaque JSON no analysis reads) over
//     kMaxFrValueBytes is replaced by a JSON string saying so, also listed;
//   - a list or dict that would have to be cut (a group's ranks, an entry's shapes or dtypes,
//     pg_status) makes no dump anyone wrote: the dump is refused (an Error naming the field),
//     the merge goes on without it (exit 3).
// A row of fr_entries holds up to eleven such values and the entry's stack: at a sixteenth of
// the limit each, the largest row a reader sorts stays under it.
#pragma once

#include <cstdint>
#include <string_view>

#include "merger/flight_recorder.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::merge::fr {

inline constexpr int64_t kMaxFrValueBytes = rs::kMaxValueBytes / 16;  // 256 KiB
// A process group's ranks as JSON (process_groups.ranks, a row of few other values): half the
// limit holds a list of 290,000 ranks and more.
inline constexpr int64_t kMaxFrRanksBytes = rs::kMaxValueBytes / 2;
// pg_status as stored (fr_dumps.pg_status): one small dict per process group.
inline constexpr int64_t kMaxFrStatusBytes = rs::kMaxValueBytes / 4;

// What a cut value ends in: "... [truncated by rankscope-merge: 314572800 bytes]".
inline constexpr std::string_view kTruncatedMarker = " [truncated by rankscope-merge: ";

// Bounds every value of `dump` as above; the cut ones are listed in dump.truncated.
rs::Result<void> BoundValues(Dump& dump);

}  // namespace rs::merge::fr
