#include "fr_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace trainer::fr {
namespace {

void Le32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

void PickleInto(const Value& v, std::string& out) {
  switch (v.kind) {
    case Value::kNone:
      out += 'N';
      return;
    case Value::kBool:
      out += v.b ? '\x88' : '\x89';
      return;
    case Value::kInt:
      if (v.i >= INT32_MIN && v.i <= INT32_MAX) {
        out += 'J';  // BININT
        Le32(out, static_cast<uint32_t>(static_cast<int32_t>(v.i)));
      } else {
        out += "\x8a\x08";  // LONG1, 8 bytes little-endian two's complement
        for (int k = 0; k < 8; ++k) {
          out += static_cast<char>((static_cast<uint64_t>(v.i) >> (8 * k)) & 0xff);
        }
      }
      return;
    case Value::kDouble: {  // BINFLOAT: big-endian IEEE double
      uint64_t bits;
      std::memcpy(&bits, &v.d, 8);
      out += 'G';
      for (int k = 7; k >= 0; --k) out += static_cast<char>((bits >> (8 * k)) & 0xff);
      return;
    }
    case Value::kString:
      out += 'X';  // BINUNICODE
      Le32(out, static_cast<uint32_t>(v.s.size()));
      out += v.s;
      return;
    case Value::kList:
      out += "](";  // EMPTY_LIST, MARK ... APPENDS
      for (const Value& x : v.items) PickleInto(x, out);
      out += 'e';
      return;
    case Value::kTuple:
      out += '(';  // MARK ... TUPLE
      for (const Value& x : v.items) PickleInto(x, out);
      out += 't';
      return;
    case Value::kDict:
      out += "}(";  // EMPTY_DICT, MARK ... SETITEMS
      for (const auto& [k, x] : v.dict) {
        PickleInto(Value::Str(k), out);
        PickleInto(x, out);
      }
      out += 'u';
      return;
  }
}

void JsonString(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

void JsonInto(const Value& v, std::string& out) {
  switch (v.kind) {
    case Value::kNone:
      out += "null";
      return;
    case Value::kBool:
      out += v.b ? "true" : "false";
      return;
    case Value::kInt:
      out += std::to_string(v.i);
      return;
    case Value::kDouble: {
      if (!std::isfinite(v.d)) {
        out += "null";  // what nlohmann::json writes for NaN and infinities
        return;
      }
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.17g", v.d);
      out += buf;
      if (std::strpbrk(buf, ".eE") == nullptr) out += ".0";
      return;
    }
    case Value::kString:
      JsonString(v.s, out);
      return;
    case Value::kList:
    case Value::kTuple:
      out += '[';
      for (size_t k = 0; k < v.items.size(); ++k) {
        if (k) out += ',';
        JsonInto(v.items[k], out);
      }
      out += ']';
      return;
    case Value::kDict: {
      std::vector<const std::pair<std::string, Value>*> sorted;
      for (const auto& kv : v.dict) sorted.push_back(&kv);
      std::stable_sort(sorted.begin(), sorted.end(),
                       [](const auto* a, const auto* b) { return a->first < b->first; });
      out += '{';
      for (size_t k = 0; k < sorted.size(); ++k) {
        if (k) out += ',';
        JsonString(sorted[k]->first, out);
        out += ':';
        JsonInto(sorted[k]->second, out);
      }
      out += '}';
      return;
    }
  }
}

}  // namespace

Value Value::Bool(bool v) {
  Value x;
  x.kind = kBool;
  x.b = v;
  return x;
}

Value Value::Int(int64_t v) {
  Value x;
  x.kind = kInt;
  x.i = v;
  return x;
}

Value Value::Double(double v) {
  Value x;
  x.kind = kDouble;
  x.d = v;
  return x;
}

Value Value::Str(std::string v) {
  Value x;
  x.kind = kString;
  x.s = std::move(v);
  return x;
}

Value Value::List(std::vector<Value> v) {
  Value x;
  x.kind = kList;
  x.items = std::move(v);
  return x;
}

Value Value::Tuple(std::vector<Value> v) {
  Value x;
  x.kind = kTuple;
  x.items = std::move(v);
  return x;
}

Value Value::Dict() {
  Value x;
  x.kind = kDict;
  return x;
}

Value& Value::Set(std::string key, Value v) {
  dict.emplace_back(std::move(key), std::move(v));
  return *this;
}

std::string Pickle(const Value& v) {
  std::string out = "\x80\x02";  // PROTO 2
  PickleInto(v, out);
  return out + '.';
}

std::string Json(const Value& v) {
  std::string out;
  JsonInto(v, out);
  return out;
}

}  // namespace trainer::fr
