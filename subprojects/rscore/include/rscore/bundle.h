// The bundle: one node's recording as a single zstd frame around an SQLite image
// (`zstd -dc NODE.rsb > node.db` gives a database the sqlite3 CLI opens).
// See man/rankscope-bundle.5.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "rscore/scratch_file.h"
#include "rscore/result.h"
#include "rscore/schema.h"
#include "rscore/sqlite.h"

namespace rs {

// A file removed when this object dies (unless released).
class TempFile {
 public:
  // Creates an empty file, mode 0600, in `dir` (or $TMPDIR, else /tmp, when empty).
  static Result<TempFile> Create(const std::string& dir, const std::string& stem);
  // An empty file without a name (rscore/scratch_file.h): nothing is left of it even
  // when the process is killed. path() opens it again while this object lives, for SQLite
  // too, as long as the database needs no journal or WAL file (read-only, journal_mode OFF).
  static Result<TempFile> CreateUnnamed(const std::string& dir, const std::string& stem);
  TempFile() = default;
  TempFile(TempFile&& o) noexcept;
  TempFile& operator=(TempFile&& o) noexcept;
  ~TempFile();
  const std::string& path() const { return path_; }
  // Open for reading and writing: an unnamed file's descriptor, else -1.
  int fd() const { return scratch_.fd; }
  void Release() { path_.clear(); }

 private:
  void Remove();
  std::string path_;
  ScratchFile scratch_;  // an unnamed file
};

// Required metadata of every bundle / merged db.
struct BundleInfo {
  int format_version = 0;
  int schema_version = 0;
  std::string db_kind;       // 'bundle' | 'merged'
  std::string recording_id;  // bundle only
  std::string node;          // bundle only
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::map<std::string, std::string> metadata;  // everything in the metadata table
};

// Writes a bundle: an SQLite db in a private temp file next to the output, compressed
// into place by Finalize() (temp + rename, so a reader never sees a half-written bundle).
class BundleWriter {
 public:
  static Result<BundleWriter> Create(const std::string& out_path, int zstd_level = 9);
  BundleWriter(BundleWriter&&) noexcept = default;
  BundleWriter& operator=(BundleWriter&&) noexcept = default;
  ~BundleWriter();

  Db& db() { return db_; }
  const std::string& out_path() const { return out_path_; }
  Result<void> SetMetadata(const std::string& key, const std::string& value);
  // Builds indexes, checkpoints, compresses to out_path atomically. Call once.
  Result<void> Finalize();

 private:
  BundleWriter() = default;
  std::string out_path_;
  int level_ = 9;
  TempFile tmp_db_;
  Db db_;
};

// Reads and validates the metadata every rankscope db must have.
Result<BundleInfo> ReadBundleInfo(Db& db);

// A bundle (.rsb) or plain SQLite db (.rsdb) opened for reading. Bundles are decompressed
// into a private temp file that lives as long as this object.
class OpenedDb {
 public:
  Db& db() { return *db_; }
  const BundleInfo& info() const { return info_; }
  bool compressed() const { return compressed_; }
  const std::string& source_path() const { return source_path_; }
  // Path of the SQLite image (the temp file for bundles).
  const std::string& sqlite_path() const { return sqlite_path_; }

 private:
  friend Result<OpenedDb> OpenRankscopeFile(const std::string&, bool, const InputLimits&);
  std::unique_ptr<Db> db_;
  TempFile tmp_;
  BundleInfo info_;
  bool compressed_ = false;
  std::string source_path_, sqlite_path_;
};

// Opens and validates: zstd frame integrity, SQLite integrity (quick_check when
// `check_integrity`), only tables and indexes in the schema (CheckSchemaObjects),
// format/schema version, required metadata, and value types and sizes where the tables are not
// STRICT (CheckValues). The connection is guarded
// (Db::GuardInput with `limits`) before the first statement. Errors name the file.
Result<OpenedDb> OpenRankscopeFile(const std::string& path, bool check_integrity = true,
                                   const InputLimits& limits = {});

}  // namespace rs
