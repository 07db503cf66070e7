// The recorder's database while it records, and what becomes of it.
//
//  - A temporary SQLite database in the recorder's working directory next to the bundle
//    (.BASE.rec-PID-XXXXXX/recording.db, see work_dir.h), with a rollback journal: the event
//    loop commits in batches, so a recorder that dies (kill -9, out of memory) leaves a
//    database that holds every batch committed before it died.
//  - A reserve of disk space beside it (recording.db.reserve), released when the disk
//    fills and before finishing, so that a bundle can still be written after a full disk.
//  - Finalize: indexes, then the zstd bundle (a new temporary file + rename, mode 0600).
//    When the bundle cannot be written, the database is kept and the error says where and
//    how to recover it.
//  - Recover (rankscope-record --recover): a database left behind becomes a bundle.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "recorder/work_dir.h"
#include "rscore/clock.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::rec {

struct RecordingDbOptions {
  bool force = false;  // --force: a bundle that appears at out_path meanwhile is replaced
  int zstd_level = 9;
  // The temporary database's journal (TRUNCATE: crash-safe commits; the benchmark compares
  // others, e.g. OFF, which is not crash-safe).
  std::string journal_mode = "TRUNCATE";
  // Disk space held back for finishing: an eighth of the free space at the start, at most this.
  uint64_t max_reserve_bytes = uint64_t{64} << 20;
};

// Counts SQLite's "database or disk is full" errors through its error log (process-wide;
// before SQLite is initialized, i.e. before the first database is opened): a statement that
// fails for lack of space rolls the batch back, and its error code is gone by the time the
// event loop notices. Without it, NoSpace relies on the free space alone.
rs::Result<void> WatchSqliteFullErrors();

// Refuses an --out that cannot be written at the end: an existing file (unless `force`), a
// directory, a directory that does not exist or is not writable, '-' (a bundle is a file, never
// standard output). `usage` is set for the existing file and '-' (a usage error: exit
// status 2).
rs::Result<void> CheckOutPath(const std::string& out_path, bool force, bool* usage = nullptr);

class RecordingDb {
 public:
  static rs::Result<RecordingDb> Create(const std::string& out_path,
                                        const RecordingDbOptions& options = {});
  RecordingDb(RecordingDb&& o) noexcept;
  RecordingDb& operator=(RecordingDb&& o) = delete;
  RecordingDb(const RecordingDb&) = delete;
  RecordingDb& operator=(const RecordingDb&) = delete;
  // Removes the temporary database (unless kept) and the reserve.
  ~RecordingDb();

  rs::Db& db() { return db_; }
  // Where the bundle goes (after Finalize: where it went).
  const std::string& out_path() const { return out_path_; }
  const std::string& temp_path() const { return temp_path_; }
  rs::Result<void> SetMetadata(const std::string& key, const std::string& value);

  // A write of the database failed for lack of space (SQLITE_FULL since Create, ENOSPC,
  // EDQUOT), or the file system is (nearly) full.
  bool NoSpace() const;
  // Free bytes on the temporary database's file system (for unprivileged users).
  uint64_t FreeBytes() const;
  uint64_t reserve_bytes() const { return reserve_bytes_; }
  // About what compressing the database takes (a quarter of its size: bundles measure a
  // fifth to a sixth), and whether the free space (besides the reserve) has fallen below it:
  // the writing stops then, so that the bundle can still be written.
  uint64_t BundleBytesNeeded() const;
  bool SpaceShort() const;
  // Gives the reserved space back to the file system (for finishing).
  void ReleaseReserve();

  // Builds the indexes (left out when there is no room for them, or not asked for: after a
  // full disk the room is kept for the bundle), then compresses into out_path. When that
  // fails the database is kept (closed, complete) and the error names it and the --recover
  // command. Call once.
  rs::Result<void> Finalize(bool with_indexes = true);
  // Where Finalize writes the bundle, decided late (a ring's stop cut).
  void set_out_path(std::string out_path) { out_path_ = std::move(out_path); }
  // Leaves the temporary database in place (a recording that could not be finished).
  void Keep() { kept_ = true; }
  bool kept() const { return kept_; }
  // Whether Finalize left the indexes out (no room).
  bool indexes_left_out() const { return indexes_left_out_; }

 private:
  RecordingDb() = default;
  std::string out_path_, temp_path_, reserve_path_;
  RecordingDbOptions options_;
  uint64_t reserve_bytes_ = 0;
  uint64_t full_errors_at_create_ = 0;
  bool kept_ = false;
  bool indexes_left_out_ = false;
  rs::Db db_;
};

// Clock references, each written as it is taken (a recovered recording has them too).
rs::Result<rs::Statement> PrepareClockRefInsert(rs::Db& db);
rs::Result<void> WriteClockRef(rs::Statement& st, const std::string& node, int64_t seq,
                               const rs::ClockRef& r);

// The command that turns a left-behind database into a bundle.
std::string RecoverCommand(const std::string& temp_path);

struct RecoverResult {
  std::string out_path;
  bool finished = false;  // the recording had been finalized (only the bundle was missing)
  std::string node;
  int64_t start_ns = 0, end_ns = 0;
  std::vector<std::pair<std::string, int64_t>> rows;  // event table -> rows
  int64_t events = 0;
  bool indexes_left_out = false;
};
// Turns a temporary database left behind into a bundle (`path`: its working directory, or a
// database file; only the recorder's own, see RecoverableDb): the journal of an interrupted
// commit is rolled back, end_ns becomes the last committed event (metadata stop_reason
// 'recovered', recovered_ns), then indexes and compression as Finalize. `out`: default
// the bundle the recorder was writing (from the file name). The database is removed once
// the bundle is written.
rs::Result<RecoverResult> Recover(const std::string& path, const std::string& out, bool force,
                                  int zstd_level = 9);

// Turns the complete database at `db_path` into the bundle `out` (indexes, compression,
// mode 0600; never replacing a file: a name taken gets a suffix) and removes the database.
// Returns where the bundle went.
rs::Result<std::string> BundleFromDatabase(const std::string& db_path, std::string out,
                                           int zstd_level = 9);

std::string FormatBytes(uint64_t bytes);

}  // namespace rs::rec
