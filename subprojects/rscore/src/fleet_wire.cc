#include "rscore/fleet_wire.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace rs::wire {
namespace {

using Json = nlohmann::json;

std::string Quote(std::string_view s) {
  if (std::all_of(s.begin(), s.end(),
                  [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; })) {
    std::string o;
    o.reserve(s.size() + 2);
    o += '"';
    o += s;
    o += '"';
    return o;
  }
  return Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Result<Json> Parse(std::string_view body, const char* what) {
  Json j = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Error(std::string(what) + ": not a JSON object");
  return j;
}

// Field readers: errors name the field.
Result<std::string> TextField(const Json& j, const char* k, const char* what, bool required) {
  if (!j.contains(k)) {
    if (!required) return std::string();
    return Error(std::string(what) + ": no \"" + k + "\"");
  }
  if (!j[k].is_string()) return Error(std::string(what) + ": \"" + k + "\" is not text");
  return j[k].get<std::string>();
}
Result<int64_t> IntField(const Json& j, const char* k, const char* what, bool required,
                         int64_t fallback = 0) {
  if (!j.contains(k)) {
    if (!required) return fallback;
    return Error(std::string(what) + ": no \"" + k + "\"");
  }
  if (!j[k].is_number_integer()) {
    return Error(std::string(what) + ": \"" + k + "\" is not an integer");
  }
  return j[k].get<int64_t>();
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<Value> DecodeCell(const Json& c) {
  if (c.is_null()) return Value(std::monostate{});
  if (c.is_number_integer()) return Value(c.get<int64_t>());
  if (c.is_number_float()) return Value(c.get<double>());
  if (c.is_string()) return Value(c.get<std::string>());
  if (c.is_object() && c.contains("hex") && c["hex"].is_string()) {
    const std::string hex = c["hex"].get<std::string>();
    if (hex.size() % 2 != 0) return Error("query reply: a blob's hex has an odd length");
    Blob b;
    b.bytes.reserve(hex.size() / 2);
    for (size_t i = 0; i < hex.size(); i += 2) {
      int hi = HexDigit(hex[i]), lo = HexDigit(hex[i + 1]);
      if (hi < 0 || lo < 0) return Error("query reply: a blob's hex is not hex");
      b.bytes.push_back(static_cast<char>(hi * 16 + lo));
    }
    return Value(std::move(b));
  }
  return Error("query reply: a cell is neither null, a number, text nor a blob");
}

}  // namespace

std::string EncodeQueryRequest(const QueryRequest& r) {
  Json j;
  j["sql"] = r.sql;
  j["limit"] = r.limit;
  j["timeout_ms"] = r.timeout_ms;
  if (!r.bundle.empty()) j["bundle"] = r.bundle;
  return Dump(j);
}

Result<QueryRequest> DecodeQueryRequest(std::string_view body) {
  constexpr const char* kWhat = "query request";
  ASSIGN_OR_RETURN(Json j, Parse(body, kWhat));
  QueryRequest r;
  ASSIGN_OR_RETURN(r.sql, TextField(j, "sql", kWhat, true));
  ASSIGN_OR_RETURN(r.limit, IntField(j, "limit", kWhat, false, r.limit));
  ASSIGN_OR_RETURN(r.timeout_ms, IntField(j, "timeout_ms", kWhat, false, r.timeout_ms));
  ASSIGN_OR_RETURN(r.bundle, TextField(j, "bundle", kWhat, false));
  if (r.limit < 0) return Error("query request: \"limit\" is negative");
  if (r.timeout_ms <= 0) return Error("query request: \"timeout_ms\" is not positive");
  return r;
}

QueryReplyWriter::QueryReplyWriter(const std::string& node, const std::string& source,
                                   const std::vector<std::string>& columns) {
  out_ = "{\"node\":" + Quote(node) + ",\"source\":" + Quote(source) + ",\"columns\":[";
  for (size_t i = 0; i < columns.size(); ++i) out_ += (i ? "," : "") + Quote(columns[i]);
  out_ += "],\"rows\":[";
}

void QueryReplyWriter::BeginRow() {
  row_start_ = out_.size();
  out_ += rows_ ? ",[" : "[";
  first_cell_ = true;
}
void QueryReplyWriter::Cell() {
  if (!first_cell_) out_ += ',';
  first_cell_ = false;
}
void QueryReplyWriter::Null() {
  Cell();
  out_ += "null";
}
void QueryReplyWriter::Int(int64_t v) {
  Cell();
  out_ += std::to_string(v);
}
void QueryReplyWriter::Real(double v) {
  Cell();
  // nlohmann writes the shortest form that reads back the same, with ".0" for whole values,
  // so the reader sees a real again. Infinity has no JSON form: a number past the range.
  if (std::isinf(v)) {
    out_ += v > 0 ? "1e999" : "-1e999";
  } else {
    out_ += Json(v).dump();
  }
}
void QueryReplyWriter::Text(std::string_view v) {
  Cell();
  out_ += Quote(v);
}
void QueryReplyWriter::BlobValue(std::string_view bytes) {
  Cell();
  static constexpr char kHex[] = "0123456789abcdef";
  out_ += "{\"hex\":\"";
  for (unsigned char c : bytes) {
    out_ += kHex[c >> 4];
    out_ += kHex[c & 15];
  }
  out_ += "\"}";
}
void QueryReplyWriter::EndRow() {
  out_ += ']';
  ++rows_;
}
void QueryReplyWriter::AbandonRow() { out_.resize(row_start_); }

std::string QueryReplyWriter::Finish(bool truncated, const std::string& truncated_by,
                                     int64_t elapsed_ns) {
  out_ += "],\"truncated\":";
  out_ += truncated ? "true" : "false";
  out_ += ",\"truncated_by\":" + Quote(truncated_by);
  out_ += ",\"elapsed_ns\":" + std::to_string(elapsed_ns) + "}";
  return std::move(out_);
}

Result<QueryReply> DecodeQueryReply(std::string_view body) {
  constexpr const char* kWhat = "query reply";
  ASSIGN_OR_RETURN(Json j, Parse(body, kWhat));
  QueryReply r;
  ASSIGN_OR_RETURN(r.node, TextField(j, "node", kWhat, true));
  ASSIGN_OR_RETURN(r.source, TextField(j, "source", kWhat, true));
  ASSIGN_OR_RETURN(r.truncated_by, TextField(j, "truncated_by", kWhat, false));
  ASSIGN_OR_RETURN(r.elapsed_ns, IntField(j, "elapsed_ns", kWhat, false));
  if (j.contains("truncated")) {
    if (!j["truncated"].is_boolean()) return Error("query reply: \"truncated\" is not true/false");
    r.truncated = j["truncated"].get<bool>();
  }
  if (!j.contains("columns") || !j["columns"].is_array()) {
    return Error("query reply: \"columns\" is not an array");
  }
  for (const auto& c : j["columns"]) {
    if (!c.is_string()) return Error("query reply: a column name is not text");
    r.columns.push_back(c.get<std::string>());
  }
  if (!j.contains("rows") || !j["rows"].is_array()) {
    return Error("query reply: \"rows\" is not an array");
  }
  for (const auto& row : j["rows"]) {
    if (!row.is_array() || row.size() != r.columns.size()) {
      return Error("query reply: a row has " + std::to_string(row.is_array() ? row.size() : 0) +
                   " cells for " + std::to_string(r.columns.size()) + " columns");
    }
    std::vector<Value> cells;
    cells.reserve(row.size());
    for (const auto& c : row) {
      ASSIGN_OR_RETURN(Value v, DecodeCell(c));
      cells.push_back(std::move(v));
    }
    r.rows.push_back(std::move(cells));
  }
  return r;
}

std::string EncodeBundleList(const std::string& node, const std::vector<BundleEntry>& bundles) {
  Json list = Json::array();
  for (const BundleEntry& b : bundles) {
    Json e;
    e["name"] = b.name;
    e["node"] = b.node;
    e["kind"] = b.kind;
    e["start_ns"] = b.start_ns;
    e["end_ns"] = b.end_ns;
    e["bytes"] = b.bytes;
    e["xxh64"] = b.xxh64;
    list.push_back(std::move(e));
  }
  Json j;
  j["node"] = node;
  j["bundles"] = std::move(list);
  return Dump(j);
}

Result<BundleList> DecodeBundleList(std::string_view body) {
  constexpr const char* kWhat = "bundle list";
  ASSIGN_OR_RETURN(Json j, Parse(body, kWhat));
  BundleList out;
  ASSIGN_OR_RETURN(out.node, TextField(j, "node", kWhat, true));
  if (!j.contains("bundles") || !j["bundles"].is_array()) {
    return Error("bundle list: \"bundles\" is not an array");
  }
  for (const auto& e : j["bundles"]) {
    if (!e.is_object()) return Error("bundle list: an entry is not an object");
    BundleEntry b;
    ASSIGN_OR_RETURN(b.name, TextField(e, "name", kWhat, true));
    ASSIGN_OR_RETURN(b.node, TextField(e, "node", kWhat, true));
    ASSIGN_OR_RETURN(b.kind, TextField(e, "kind", kWhat, true));
    ASSIGN_OR_RETURN(b.start_ns, IntField(e, "start_ns", kWhat, true));
    ASSIGN_OR_RETURN(b.end_ns, IntField(e, "end_ns", kWhat, true));
    ASSIGN_OR_RETURN(b.bytes, IntField(e, "bytes", kWhat, true));
    ASSIGN_OR_RETURN(b.xxh64, TextField(e, "xxh64", kWhat, true));
    out.bundles.push_back(std::move(b));
  }
  return out;
}

std::string EncodeTime(const std::string& node, int64_t time_ns) {
  return "{\"node\":" + Quote(node) + ",\"time_ns\":" + std::to_string(time_ns) + "}";
}

Result<TimeReply> DecodeTime(std::string_view body) {
  constexpr const char* kWhat = "time reply";
  ASSIGN_OR_RETURN(Json j, Parse(body, kWhat));
  TimeReply t;
  ASSIGN_OR_RETURN(t.node, TextField(j, "node", kWhat, true));
  ASSIGN_OR_RETURN(t.time_ns, IntField(j, "time_ns", kWhat, true));
  return t;
}

std::string EncodeError(const std::string& message) { return "{\"error\":" + Quote(message) + "}"; }

std::string DecodeError(std::string_view body) {
  Json j = Json::parse(body.begin(), body.end(), nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error") && j["error"].is_string()) {
    return j["error"].get<std::string>();
  }
  std::string s(body.substr(0, 200));
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return s.empty() ? "(no message)" : s;
}

bool Overlaps(const BundleEntry& b, int64_t since_ns, int64_t until_ns) {
  if (since_ns != 0 && b.end_ns < since_ns) return false;
  if (until_ns != 0 && b.start_ns > until_ns) return false;
  return true;
}

}  // namespace rs::wire
