// Test helpers of the merger tests: temp directories and bundles rewritten in controlled ways
// (a changed row, a flipped byte, a truncated frame). One copy for every merger test.
#pragma once

#include <cstdint>
#include <string>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::merge::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Decompresses bundle `in`, runs `sql` on the SQLite image, and compresses it into `out`.
rs::Result<void> RewriteBundle(const std::string& in, const std::string& out,
                               const std::string& sql);
// Decompresses bundle `in`, flips the byte at `offset` of the SQLite image, recompresses.
rs::Result<void> FlipByteInImage(const std::string& in, const std::string& out, int64_t offset);
// Copies the first `bytes` bytes of `in` to `out`.
rs::Result<void> Truncate(const std::string& in, const std::string& out, int64_t bytes);
rs::Result<void> WriteText(const std::string& path, const std::string& text);
int64_t FileSize(const std::string& path);
// A valid bundle without any events.
rs::Result<void> WriteEmptyBundle(const std::string& path, const std::string& node,
                                  const std::string& recording_id);
// Opens a merged db for queries.
rs::Result<rs::Db> OpenMerged(const std::string& path);

}  // namespace rs::merge::testing
