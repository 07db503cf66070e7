// The workstation tools' JSON (query, report, trace export): a streaming writer whose keys come
// out in call order, so the report's key order is stable. Strings are escaped by nlohmann-json:
// valid UTF-8 passes through, control characters are escaped, and a byte that is not UTF-8 (a
// recorded process name or a query's text cell may hold any bytes) becomes U+FFFD, so the
// output is always valid JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rs {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view k);
  JsonWriter& String(std::string_view s);
  JsonWriter& Int(int64_t v);
  JsonWriter& Double(double v);  // NaN / infinity -> null
  JsonWriter& Bool(bool v);
  JsonWriter& Null();
  const std::string& str() const { return out_; }

  static std::string Quote(std::string_view s);
  // A double as JSON: whole values below 9e15 as integers, others with the fewest digits that
  // read back to the same double; NaN / infinity -> null.
  static std::string Number(double v);

 private:
  void Separate();
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written yet
  bool after_key_ = false;
};

// `s` as valid UTF-8: well-formed sequences kept, every other byte replaced by U+FFFD (the
// same policy as the JSON strings), for outputs that require UTF-8 (Perfetto's strings).
std::string ValidUtf8(std::string_view s);

}  // namespace rs
