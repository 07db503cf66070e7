// SQL functions of SQLite 3.40 (Debian 12's) whose one call can outlast any time limit: the
// time limit is a progress handler, which SQLite calls between the steps of its virtual
// machine, never inside a function. printf('%.*c', 2147483647, 'x') loops 2^31 times whatever
// the size limit on values (SQLITE_LIMIT_LENGTH) says (it stops growing its result, not its
// loop: 15 s of CPU per call); instr(), replace(), LIKE, GLOB and trim() compare every position
// of one value with the whole of another (4 MiB by 2 MiB: minutes). On a query connection
// these are replaced by wrappers that first bound the call's work from its arguments and
// refuse a call over the bound with an error saying so, then have SQLite's own function do
// the call (on an in-memory connection of the wrapper's), so that every result is SQLite's.
//   printf(), format(): the widths and precisions together at most the connection's
//     SQLITE_LIMIT_LENGTH (its result could not be larger; SQLITE_TOOBIG, "a text or blob
//     value over the limit of N bytes", at once)
//   instr(X, Y), replace(X, Y, Z): bytes of X times bytes of Y at most kMaxCompareBytes
//   LIKE, GLOB (like(), glob()), trim/ltrim/rtrim(X, Y): bytes times bytes at most
//     kMaxMatchSteps
// Each bound is about a second of one core for the worst arguments.
#pragma once

#include <cstdint>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs {

inline constexpr int64_t kMaxCompareBytes = int64_t{1} << 36;
inline constexpr int64_t kMaxMatchSteps = int64_t{1} << 29;

// Replaces the functions above on `db` (a connection that runs a user's SQL).
Result<void> BoundExpensiveFunctions(Db& db);

// The bytes printf(format, args...) must write at least by its widths and precisions alone
// (string precisions, which only cut, excepted), following SQLite 3.40's reading of a format
// and its arguments (`args`: those after the format).
int64_t PrintfFieldBytes(const char* format, int argc, sqlite3_value** args);

}  // namespace rs
