// Every attachment the recorder tries (tracepoints, uprobes), successful or not: rows of the
// `attachments` table, and a line on stderr (failures always, successes with -v).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::rec {

struct Attachment {
  std::string kind;    // 'tracepoint', 'nccl', 'cudart', 'cuda'
  std::string target;  // tracepoint name or library file
  std::string symbol;
  bool ok = false;
  std::string error;
  std::string build_id;
};

class AttachLog {
 public:
  // `db` may be null (rows are kept in memory only). Log lines go to rs::rec::Log.
  AttachLog(rs::Db* db, std::string node, bool verbose);

  void Record(const std::string& kind, const std::string& target, const std::string& symbol,
              bool ok, const std::string& error = "", const std::string& build_id = "");

  const std::vector<Attachment>& entries() const { return entries_; }
  int failures() const { return failures_; }
  // First error writing a row (the row is still kept in entries()).
  const rs::Result<void>& write_status() const { return write_status_; }

 private:
  rs::Db* db_;
  std::string node_;
  bool verbose_;
  std::vector<Attachment> entries_;
  int failures_ = 0;
  rs::Result<void> write_status_;
};

}  // namespace rs::rec
