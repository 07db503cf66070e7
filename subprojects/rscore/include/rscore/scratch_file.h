// Private scratch files that leave nothing behind, even when the process is killed: the
// decompressed copies of bundles and the parts of a merge (the implementation is in
// output.cc, beside the output files of rscore/output.h).
#pragma once

#include <string>

#include "rscore/result.h"

namespace rs {

// A private scratch file: unnamed where possible (O_TMPFILE in `dir`, else created and
// unlinked at once), so that nothing is left even when the process is killed. `path` opens it
// again while `fd` is open (/proc/self/fd/N); SQLite opens such paths as well, for databases
// that need no journal or WAL file beside them (journal_mode OFF, or read-only). Only where
// /proc is missing does it keep a name (.STEM.tmp-rankscope-PID-XXXXXX), removed by the signal
// cleanup; `named` is set then.
struct ScratchFile {
  int fd = -1;
  std::string path;
  std::string named;
  int cleanup_slot = -1;
};
Result<ScratchFile> CreateScratchFile(const std::string& dir, const std::string& stem);
// Closes it and removes its name, if it has one.
void ReleaseScratchFile(ScratchFile& f);

// Lets every later SQLite connection open and attach /proc/self/fd/N (SQLite would resolve the
// link to a name that does not exist, and create it). Called by rs::Db::Open before it opens
// anything; call it first where a connection is opened otherwise.
void UseFdPathsInSqlite();

// $TMPDIR, else /tmp.
std::string TempDir();

}  // namespace rs
