// The recorder's private working directory, and the files it makes beside a bundle.
//
// While it records, the recorder's database lives in a directory of its own next to the
// bundle: OUT_DIR/.BASE.rec-PID-XXXXXX/ (BASE: the bundle's file name, PID: the recorder's),
// made by mkdtemp (mode 0700, a name nobody could take first). Inside it: recording.db, the
// journal SQLite keeps beside it (-journal, or -wal and -shm), and the disk space reserve.
// No other user can create, replace or link anything there, which a file SQLite opens by name
// needs: it creates its journals with O_CREAT but not O_EXCL, so in a directory others write
// to (--out /var/tmp/n.rsb) a journal name planted first (a hard link to /etc/shadow where
// fs.protected_hardlinks is 0, or a file of the planter's) would be written through, or read
// back into the recording as a journal to roll back.
//
// The bundle itself is compressed into a file created with O_EXCL under a name of the
// recorder's choosing beside the bundle (.BASE.partial-PID-XXXXXX), then renamed onto BASE:
// a rename replaces a planted link instead of writing through it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rscore/result.h"

namespace rs::rec {

// The database's name in its working directory.
inline constexpr char kWorkDbName[] = "recording.db";

// Makes OUT_DIR/.BASE.rec-PID-XXXXXX (mode 0700); returns its path.
rs::Result<std::string> MakeWorkDir(const std::string& out_path);
// The working directory of a database in one (or "" for a database elsewhere).
std::string WorkDirOf(const std::string& db_path);
// Removes a database's files (itself, its journals, its reserve) and its working directory
// once that is empty.
void RemoveDbFiles(const std::string& db_path);

// A file made new (O_EXCL, mode 0600) beside `out` for its compressed contents.
struct PartialFile {
  int fd = -1;
  std::string path;
};
rs::Result<PartialFile> CreatePartialBeside(const std::string& out);
// ".BASE.partial-PID-XXXXXX" -> PID; nullopt for any other name.
std::optional<pid_t> ParsePartialName(const std::string& file_name);

// ".BASE.rec-PID-XXXXXX" (a working directory) or ".BASE.rec-PID-XXXXXX.db" (the database
// file of an earlier recorder, which kept it beside the bundle) -> {BASE, PID}; nullopt for
// any other name.
std::optional<std::pair<std::string, pid_t>> ParseTempName(const std::string& file_name);

// Databases in `dir` whose recorder is no longer running (pid not alive); removes what only
// held space or was half-written for them (reserves, partial bundles).
struct LeftBehind {
  std::string path;  // the working directory (or an earlier recorder's database file)
  pid_t pid = 0;
  uint64_t bytes = 0;
};
std::vector<LeftBehind> FindLeftBehind(const std::string& dir);

// The database to recover from `path` (a working directory or a database file), checked to
// be the recorder's own: every file of it a regular file of this user with one link, a
// working directory of this user that nobody else may write. Anything else is refused: in a
// directory others write to, it could be a database (and journal) planted to be recovered.
rs::Result<std::string> RecoverableDb(const std::string& path);

// Whether a process with that pid exists (signal 0; EPERM: it does, another user's).
bool ProcessAlive(pid_t pid);

}  // namespace rs::rec
