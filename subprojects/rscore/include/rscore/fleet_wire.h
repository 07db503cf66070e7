// The fleet protocol: what rankscope-fleet and a node's server (rankscope-serve,
// rankscope-record --serve) say to each other over HTTPS (man rankscope-serve, PROTOCOL).
//
//   GET  /v1/time                  {"node": N, "time_ns": T}          the node's wall clock
//   POST /v1/query   QueryRequest  QueryReply                         guarded read-only SQL
//   GET  /v1/bundles[?since=NS&until=NS]  {"node": N, "bundles": [BundleEntry...]}
//   GET  /v1/bundle/NAME           the file (Range requests resume; header X-Rankscope-XXH64)
//
// Errors are a status other than 200/206 with {"error": "what and why"}.
// JSON through nlohmann-json; cells keep their SQLite type: integer, real (always written
// with a fraction or exponent), text, null, and blobs as {"hex": "..."}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "rscore/result.h"

namespace rs::wire {

inline constexpr int kProtocolVersion = 1;
inline constexpr const char* kXxh64Header = "X-Rankscope-XXH64";

struct QueryRequest {
  std::string sql;
  int64_t limit = 10000;       // rows at most (the node caps it with its own limit)
  int64_t timeout_ms = 30000;  // the node caps it with its own limit
  std::string bundle;          // which recording: empty = the node's default
};
std::string EncodeQueryRequest(const QueryRequest& r);
Result<QueryRequest> DecodeQueryRequest(std::string_view body);

struct Blob {
  std::string bytes;
  bool operator==(const Blob&) const = default;
};
// A cell: NULL, INTEGER, REAL, TEXT or BLOB.
using Value = std::variant<std::monostate, int64_t, double, std::string, Blob>;

struct QueryReply {
  std::string node;    // the node's name as it records it
  std::string source;  // what was queried: "live" or a bundle's name
  std::vector<std::string> columns;
  std::vector<std::vector<Value>> rows;
  bool truncated = false;
  std::string truncated_by;  // "rows" (the row limit) or "bytes" (the result size limit)
  int64_t elapsed_ns = 0;    // the query's time on the node
};
// The reply's JSON is built row by row (QueryReplyWriter) so that its size can be bounded as
// it grows; DecodeQueryReply reads it back.
class QueryReplyWriter {
 public:
  QueryReplyWriter(const std::string& node, const std::string& source,
                   const std::vector<std::string>& columns);
  void BeginRow();
  void Null();
  void Int(int64_t v);
  void Real(double v);
  void Text(std::string_view v);
  void BlobValue(std::string_view bytes);
  void EndRow();
  size_t size() const { return out_.size(); }
  // Drops the row being written (it would pass the size limit).
  void AbandonRow();
  std::string Finish(bool truncated, const std::string& truncated_by, int64_t elapsed_ns);

 private:
  void Cell();
  std::string out_;
  size_t row_start_ = 0;
  int64_t rows_ = 0;
  bool first_cell_ = true;
};
Result<QueryReply> DecodeQueryReply(std::string_view body);

struct BundleEntry {
  std::string name;  // its path under the served directory ("node3.rsb", "CUT-ID/node3.rsb")
  std::string node;
  std::string kind;                  // "bundle" or "cut"
  int64_t start_ns = 0, end_ns = 0;  // the recording's span (node clock)
  int64_t bytes = 0;
  std::string xxh64;  // 16 hex digits of the file's XXH64 (seed 0)
};
std::string EncodeBundleList(const std::string& node, const std::vector<BundleEntry>& bundles);
struct BundleList {
  std::string node;
  std::vector<BundleEntry> bundles;
};
Result<BundleList> DecodeBundleList(std::string_view body);

std::string EncodeTime(const std::string& node, int64_t time_ns);
struct TimeReply {
  std::string node;
  int64_t time_ns = 0;
};
Result<TimeReply> DecodeTime(std::string_view body);

std::string EncodeError(const std::string& message);
// The message of an error body; the body itself (shortened) when it is not one.
std::string DecodeError(std::string_view body);

// Whether a bundle [start, end] overlaps [since, until] (0: open end).
bool Overlaps(const BundleEntry& b, int64_t since_ns, int64_t until_ns);

}  // namespace rs::wire
