#include "rscore/json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace rs {

std::string JsonWriter::Quote(std::string_view s) {
  // Printable ASCII without '"' and '\\' (most names and values) needs no escaping.
  if (std::all_of(s.begin(), s.end(),
                  [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; })) {
    std::string o;
    o.reserve(s.size() + 2);
    o += '"';
    o += s;
    o += '"';
    return o;
  }
  return nlohmann::json(std::string(s)).dump(-1, ' ', /*ensure_ascii=*/false,
                                             nlohmann::json::error_handler_t::replace);
}

void JsonWriter::Separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ",";
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::BeginObject() {
  Separate();
  out_ += "{";
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::EndObject() {
  first_.pop_back();
  out_ += "}";
  return *this;
}
JsonWriter& JsonWriter::BeginArray() {
  Separate();
  out_ += "[";
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::EndArray() {
  first_.pop_back();
  out_ += "]";
  return *this;
}
JsonWriter& JsonWriter::Key(std::string_view k) {
  Separate();
  out_ += Quote(k) + ":";
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::String(std::string_view s) {
  Separate();
  out_ += Quote(s);
  return *this;
}
JsonWriter& JsonWriter::Int(int64_t v) {
  Separate();
  out_ += std::to_string(v);
  return *this;
}
std::string JsonWriter::Number(double v) {
  if (!std::isfinite(v)) return "null";
  if (v == std::floor(v) && std::fabs(v) < 9e15) {
    return std::to_string(static_cast<int64_t>(v));
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round trip
  return ec == std::errc() ? std::string(buf, end) : "null";
}

JsonWriter& JsonWriter::Double(double v) {
  Separate();
  out_ += Number(v);
  return *this;
}
JsonWriter& JsonWriter::Bool(bool v) {
  Separate();
  out_ += v ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::Null() {
  Separate();
  out_ += "null";
  return *this;
}

}  // namespace rs
