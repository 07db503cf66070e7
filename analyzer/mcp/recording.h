// The recording an MCP server answers about, opened once when the server starts: a merged
// database (.rsdb) or one node's bundle (.rsb), or several bundles (files or directories of
// them) merged by rankscope-merge's library into a private file without a name before serving.
// What the tools share is computed once and kept: the report (the same BuildReport as
// `rankscope-analyze report`), its JSON, the collectives as the report compares them, the node
// names.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/collectives.h"
#include "analyzer/mcp/json_rpc.h"
#include "analyzer/report_model.h"
#include "rscore/bundle.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer::mcp {

class Recording {
 public:
  // `inputs`: one .rsdb or .rsb, or several bundles / directories of bundles (merged; the
  // merge's lines go to `log`). Errors name the input.
  static rs::Result<std::unique_ptr<Recording>> Open(const std::vector<std::string>& inputs,
                                                     bool check_integrity, std::ostream& log);
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  // How results name it: the input as given, or "3 bundles merged: a.rsb, b.rsb, c.rsb".
  const std::string& name() const { return name_; }
  // A path that opens it again (for the exporter): the input, or /proc/self/fd/N of the
  // merged file.
  const std::string& path() const { return path_; }
  const rs::BundleInfo& info() const { return opened_.info(); }
  bool merged_here() const { return merged_fd_ >= 0; }
  // The zero of every +offset (the recording's start, as report and export count it).
  int64_t start_ns() const;

  // The connection the analyses read. Start every step of a tool call with BeginCall: the
  // input's time limit counts per step (rs::Db::RestartDeadline), not over the server's life
  // (tool_bounds.h: the analyses get longer than the look-ups).
  rs::Db& db() { return opened_.db(); }
  void BeginCall(int64_t time_limit_ns);
  // A second connection for users' SQL: the query views (TABLE_v) and the read-only guard of
  // `rankscope-analyze query`, made on first use.
  rs::Result<rs::Db*> QueryDb();

  rs::Result<const Report*> GetReport();
  // RenderJson of the report, parsed: the objects `report --format json` prints.
  rs::Result<const Json*> ReportJson();
  // The collectives with their arrivals and call semantics as the report compares them.
  rs::Result<const CollectiveData*> Collectives();
  // Node names in natural order (node2 before node10).
  rs::Result<const std::vector<std::string>*> Nodes();
  // An error for a node that is not in the recording, naming those that are (`what`: how
  // the caller named the argument).
  rs::Result<void> CheckNode(const std::string& node, const std::string& what);
  // A time as report's --from/--to take it (rscore/time_arg.h), in ns since the epoch.
  rs::Result<int64_t> ResolveTime(const std::string& text, const std::string& what) const;

 private:
  Recording() = default;
  rs::OpenedDb opened_;
  std::string name_, path_;
  int merged_fd_ = -1;  // the merged file (unlinked), held open
  std::unique_ptr<rs::Db> query_db_;
  std::optional<Report> report_;
  std::optional<Json> report_json_;
  std::optional<CollectiveData> collectives_;
  std::optional<std::vector<std::string>> nodes_;
};

}  // namespace rs::analyzer::mcp
