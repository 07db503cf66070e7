#include "json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace analyzer {

std::string JsonWriter::Quote(std::string_view s) {
  std::string o = "\"";
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      case '\r':
        o += "\\r";
        break;
      case '\t':
        o += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += ch;
        }
    }
  }
  return o + "\"";
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

}  // namespace analyzer
