// The values of a Flight Recorder dump and the two encodings PyTorch writes them in
// (torch/csrc/distributed/c10d/FlightRecorderDetail.hpp): dump() pickles a c10::Dict with the
// C++ pickler (protocol 2; dicts keep their insertion order), dump_json() builds an
// nlohmann::json object (whose keys come out sorted, std::map's order) in which tuples are
// lists. What differs in content between the two (None against 0 for times not discovered,
// strings for pg_status's numbers, no frames, no empty entry list) is decided by the caller,
// flight_recorder.cc; this file only encodes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trainer::fr {

struct Value {
  enum Kind { kNone, kBool, kInt, kDouble, kString, kList, kTuple, kDict };
  Kind kind = kNone;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<Value> items;                         // list, tuple
  std::vector<std::pair<std::string, Value>> dict;  // keys in insertion order

  static Value None() { return Value(); }
  static Value Bool(bool v);
  static Value Int(int64_t v);
  static Value Double(double v);
  static Value Str(std::string v);
  static Value List(std::vector<Value> v = {});
  static Value Tuple(std::vector<Value> v);
  static Value Dict();
  // Appends a key (dicts); returns *this for chaining.
  Value& Set(std::string key, Value v);
};

// Protocol 2, the opcodes PyTorch's C++ pickler writes for these types: BINUNICODE strings,
// BININT / LONG1 integers, BINFLOAT, NEWTRUE / NEWFALSE, NONE, EMPTY_DICT + SETITEMS,
// EMPTY_LIST + APPENDS, MARK + TUPLE.
std::string Pickle(const Value& v);
// Compact JSON with object keys sorted (nlohmann::json's default), tuples as arrays.
std::string Json(const Value& v);

}  // namespace trainer::fr
