#include "rscore/pickle.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <deque>
#include <exception>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "pickle_opcodes.h"

namespace rs::pickle {
namespace {

enum class Kind : uint8_t { kNone, kBool, kInt, kUint, kFloat, kStr, kBytes, kList, kTuple, kDict };

// A value on the stack, in the memo or in a container: scalars inline, text and containers by
// index, so that memo references share them as Python's do.
struct Value {
  Kind kind = Kind::kNone;
  union {
    bool b;
    int64_t i;
    uint64_t u;
    double f;
    std::size_t index;  // into Decoder::strings_ (kStr, kBytes) or Decoder::containers_
  };
  Value() : u(0) {}
};

struct Container {
  Kind kind;
  std::vector<Value> items;                   // list, tuple
  std::map<std::string_view, Value> entries;  // dict: key text -> value, the last one set
  // Measured once, on the way to JSON.
  enum class State : uint8_t { kUnseen, kOpen, kDone } state = State::kUnseen;
  std::size_t height = 0;  // containers on the longest path down from here, this one included
  std::size_t values = 0;  // in the output, this one included
  std::size_t bytes = 0;   // of str / bytes payload and keys in the output
};

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "a bool";
    case Kind::kInt:
    case Kind::kUint:
      return "an int";
    case Kind::kFloat:
      return "a float";
    case Kind::kStr:
      return "a str";
    case Kind::kBytes:
      return "a bytes object";
    case Kind::kList:
      return "a list";
    case Kind::kTuple:
      return "a tuple";
    case Kind::kDict:
      return "a dict";
  }
  return "?";
}

// INT's and LONG's text: CPython's unpickler reads it in base 0, where a leading zero makes
// "017" octal (15) or an error. No writer puts one there; reading it as decimal would disagree.
bool HasLeadingZero(std::string_view text) {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) text.remove_prefix(1);
  return text.size() > 1 && text[0] == '0';
}

std::size_t SaturatingAdd(std::size_t a, std::size_t b) {
  return b > std::numeric_limits<std::size_t>::max() - a ? std::numeric_limits<std::size_t>::max()
                                                         : a + b;
}

class Decoder {
 public:
  Decoder(std::string_view data, const Limits& limits) : data_(data), limits_(limits) {}

  Result<nlohmann::json> Run() {
    RETURN_IF_ERROR(Scan());
    for (std::size_t pos = 0;;) {
      const Op op = ReadOp(data_, pos).value();
      pos = op.end;
      if (op.code == kStop) {
        if (!marks_.empty()) return Fail(op, "a MARK is still open");
        if (stack_.size() != 1)
          return Fail(op, std::to_string(stack_.size()) + " values on the stack instead of 1");
        break;
      }
      RETURN_IF_ERROR(Execute(op));
    }
    const Value root = stack_.back();
    if (IsContainer(root)) {
      RETURN_IF_ERROR(Measure(root.index, 1));
      const Container& c = containers_[root.index];
      RETURN_IF_ERROR(CheckTotals(c.values, c.bytes));
    }
    return ToJson(root);
  }

 private:
  // Reads every opcode up to STOP before any runs, so that a refused one anywhere refuses the
  // input, and every operand is known to fit in it.
  Result<void> Scan() const {
    std::size_t pos = 0;
    for (bool stop = false; !stop;) {
      if (pos == data_.size())
        return Error("the pickle ends after " + std::to_string(pos) + " bytes without STOP");
      ASSIGN_OR_RETURN(Op op, ReadOp(data_, pos));
      pos = op.end;
      stop = op.code == kStop;
    }
    if (pos != data_.size()) {
      return Error("offset " + std::to_string(pos) + ": " + std::to_string(data_.size() - pos) +
                   " bytes after STOP (a dump holds one pickle)");
    }
    return Ok();
  }

  static bool IsContainer(const Value& v) { return v.kind >= Kind::kList; }

  Error Fail(const Op& op, const std::string& what) const {
    return Error("offset " + std::to_string(op.offset) + ": " + op.name + ": " + what);
  }

  Result<void> Execute(const Op& op) {
    switch (op.code) {
      case kProto:
        if (static_cast<uint8_t>(op.arg[0]) > 5)
          return Fail(op, "protocol " + std::to_string(static_cast<uint8_t>(op.arg[0])) +
                              " (this decoder knows 0-5)");
        return Ok();
      case kFrame:
        return Ok();  // checked against the input by ReadOp
      case kMark:
        marks_.push_back(stack_.size());
        return Ok();
      case kPop:
        if (stack_.size() > Fence()) {
          stack_.pop_back();
        } else if (!marks_.empty()) {
          marks_.pop_back();  // as Python: POP on an empty MARK drops the MARK
        } else {
          return Fail(op, "stack underflow");
        }
        return Ok();
      case kPopMark: {
        ASSIGN_OR_RETURN(std::size_t start, PopMark(op));
        stack_.resize(start);
        return Ok();
      }
      case kDup: {
        ASSIGN_OR_RETURN(Value top, Top(op));
        return Push(op, top);
      }
      case kNone:
        return Push(op, Value());
      case kNewTrue:
      case kNewFalse:
        return Push(op, Bool(op.code == kNewTrue));
      case kInt:
      case kLong: {
        if (op.code == kInt && (op.arg == "00" || op.arg == "01"))
          return Push(op, Bool(op.arg == "01"));
        std::string_view text = op.arg;
        if (op.code == kLong && !text.empty() && text.back() == 'L') text.remove_suffix(1);
        if (HasLeadingZero(text)) {
          return Fail(op, "a leading zero in '" + Printable(op.arg) +
                              "' (CPython reads it as octal, or not at all)");
        }
        return PushInteger(op, ParseDecimal(text));
      }
      case kBinInt: {
        Value v;
        v.kind = Kind::kInt;
        v.i = static_cast<int32_t>(static_cast<uint32_t>(ReadLE(op.arg)));
        return Push(op, v);
      }
      case kBinInt1:
      case kBinInt2:
        return PushInteger(op, Integer{false, ReadLE(op.arg)});
      case kLong1:
      case kLong4:
        return PushInteger(op, DecodeLittleEndian(op.arg));
      case kFloat: {
        std::optional<double> f = ParseFloat(op.arg);
        if (!f) return Fail(op, "not a float: '" + Printable(op.arg) + "'");
        return Push(op, Float(*f));
      }
      case kBinFloat:
        return Push(op, Float(ReadBinFloat(op.arg)));
      case kString: {
        Result<std::string> bytes = DecodeQuotedString(op.arg);
        if (!bytes.ok()) return Fail(op, bytes.error().message());
        return PushText(op, Kind::kStr, std::move(bytes).value());
      }
      case kBinString:
      case kShortBinString:
      case kBinUnicode:
      case kShortBinUnicode:
      case kBinUnicode8:
        return PushText(op, Kind::kStr, std::string(op.arg));
      case kUnicode: {
        Result<std::string> text = DecodeRawUnicodeEscape(op.arg);
        if (!text.ok()) return Fail(op, text.error().message());
        return PushText(op, Kind::kStr, std::move(text).value());
      }
      case kBinBytes:
      case kShortBinBytes:
      case kBinBytes8:
      case kByteArray8:
        return PushText(op, Kind::kBytes, std::string(op.arg));
      case kEmptyList:
        return Push(op, NewContainer(Kind::kList));
      case kEmptyTuple:
        return Push(op, NewContainer(Kind::kTuple));
      case kEmptyDict:
        return Push(op, NewContainer(Kind::kDict));
      case kList:
      case kTuple:
      case kDict: {
        ASSIGN_OR_RETURN(std::size_t start, PopMark(op));
        const Value made = NewContainer(op.code == kList    ? Kind::kList
                                        : op.code == kTuple ? Kind::kTuple
                                                            : Kind::kDict);
        RETURN_IF_ERROR(op.code == kDict ? SetItems(op, made, start) : AddItems(made, start));
        stack_.resize(start);
        return Push(op, made);
      }
      case kTuple1:
      case kTuple2:
      case kTuple3: {
        const std::size_t n = op.code - kTuple1 + 1;
        if (stack_.size() - Fence() < n) return Fail(op, "stack underflow");
        const Value made = NewContainer(Kind::kTuple);
        RETURN_IF_ERROR(AddItems(made, stack_.size() - n));
        stack_.resize(stack_.size() - n);
        return Push(op, made);
      }
      case kAppend:
      case kSetItem: {
        const std::size_t n = op.code == kAppend ? 1 : 2;
        if (stack_.size() - Fence() < n + 1) return Fail(op, "stack underflow");
        const std::size_t start = stack_.size() - n;
        RETURN_IF_ERROR(op.code == kAppend ? Append(op, stack_[start - 1], start)
                                           : SetItems(op, stack_[start - 1], start));
        stack_.resize(start);
        return Ok();
      }
      case kAppends:
      case kSetItems: {
        ASSIGN_OR_RETURN(std::size_t start, PopMark(op));
        if (start <= Fence()) return Fail(op, "stack underflow (nothing below the MARK)");
        RETURN_IF_ERROR(op.code == kAppends ? Append(op, stack_[start - 1], start)
                                            : SetItems(op, stack_[start - 1], start));
        stack_.resize(start);
        return Ok();
      }
      case kPut:
      case kBinPut:
      case kLongBinPut:
      case kMemoize: {
        ASSIGN_OR_RETURN(Value top, Top(op));
        uint64_t key = memo_.size();
        if (op.code != kMemoize) {
          ASSIGN_OR_RETURN(key, MemoKey(op));
        }
        memo_[key] = top;
        return Ok();
      }
      case kGet:
      case kBinGet:
      case kLongBinGet: {
        ASSIGN_OR_RETURN(uint64_t key, MemoKey(op));
        auto it = memo_.find(key);
        if (it == memo_.end()) return Fail(op, "memo entry " + std::to_string(key) + " is unset");
        return Push(op, it->second);
      }
    }
    return Fail(op, "not handled");  // ReadOp passes only the opcodes above
  }

  std::size_t Fence() const { return marks_.empty() ? 0 : marks_.back(); }

  // Ends the innermost MARK; returns where its items start on the stack.
  Result<std::size_t> PopMark(const Op& op) {
    if (marks_.empty()) return Fail(op, "no MARK to end");
    const std::size_t start = marks_.back();
    marks_.pop_back();
    return start;
  }

  Result<Value> Top(const Op& op) const {
    if (stack_.size() <= Fence()) return Fail(op, "stack underflow");
    return stack_.back();
  }

  Result<void> Push(const Op& op, const Value& v) {
    if (++pushed_ > limits_.max_values) {
      return Fail(
          op, "more than " + std::to_string(limits_.max_values) + " values (Limits::max_values)");
    }
    stack_.push_back(v);
    return Ok();
  }

  static Value Bool(bool b) {
    Value v;
    v.kind = Kind::kBool;
    v.b = b;
    return v;
  }

  static Value Float(double f) {
    Value v;
    v.kind = Kind::kFloat;
    v.f = f;
    return v;
  }

  Result<void> PushInteger(const Op& op, std::optional<Integer> n) {
    if (!n) return Fail(op, "not an integer of at most 64 bits: '" + Printable(op.arg) + "'");
    Value v;
    if (n->negative) {
      v.kind = Kind::kInt;
      v.i = static_cast<int64_t>(~n->magnitude + 1);  // two's complement, -2^63 included
    } else if (n->magnitude > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      v.kind = Kind::kUint;
      v.u = n->magnitude;
    } else {
      v.kind = Kind::kInt;
      v.i = static_cast<int64_t>(n->magnitude);
    }
    return Push(op, v);
  }

  Result<void> PushText(const Op& op, Kind kind, std::string text) {
    if (kind == Kind::kStr && !IsUtf8(text)) return Fail(op, "the string is not valid UTF-8");
    RETURN_IF_ERROR(CountBytes(op, text.size()));
    Value v;
    v.kind = kind;
    v.index = strings_.size();
    strings_.push_back(std::move(text));
    return Push(op, v);
  }

  Result<void> CountBytes(const Op& op, std::size_t n) {
    decoded_bytes_ = SaturatingAdd(decoded_bytes_, n);
    if (decoded_bytes_ > limits_.max_bytes) {
      return Fail(op, "more than " + std::to_string(limits_.max_bytes) +
                          " bytes of strings (Limits::max_bytes)");
    }
    return Ok();
  }

  Value NewContainer(Kind kind) {
    Value v;
    v.kind = kind;
    v.index = containers_.size();
    containers_.push_back(Container{kind, {}, {}});
    return v;
  }

  Result<uint64_t> MemoKey(const Op& op) const {
    if (op.code != kGet && op.code != kPut) return ReadLE(op.arg);
    std::optional<Integer> n = ParseDecimal(op.arg);
    if (!n || n->negative) return Fail(op, "not a memo index: '" + Printable(op.arg) + "'");
    return n->magnitude;
  }

  // Moves stack_[start...] into the new tuple or list `to`.
  Result<void> AddItems(const Value& to, std::size_t start) {
    std::vector<Value>& items = containers_[to.index].items;
    items.insert(items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(start), stack_.end());
    return Ok();
  }

  Result<void> Append(const Op& op, const Value& to, std::size_t start) {
    if (to.kind != Kind::kList)
      return Fail(op, std::string("appends to ") + KindName(to.kind) + ", not to a list");
    return AddItems(to, start);
  }

  // Sets the key / value pairs stack_[start...] in the dict `to`.
  Result<void> SetItems(const Op& op, const Value& to, std::size_t start) {
    if (to.kind != Kind::kDict)
      return Fail(op, std::string("sets items in ") + KindName(to.kind) + ", not in a dict");
    if ((stack_.size() - start) % 2 != 0) return Fail(op, "an odd number of keys and values");
    for (std::size_t k = start; k < stack_.size(); k += 2) {
      ASSIGN_OR_RETURN(std::string_view key, KeyText(op, stack_[k]));
      containers_[to.index].entries[key] = stack_[k + 1];
    }
    return Ok();
  }

  // A dict key as JSON's: a str as it is, an int as its decimal text.
  Result<std::string_view> KeyText(const Op& op, const Value& key) {
    if (key.kind == Kind::kStr) return std::string_view(strings_[key.index]);
    if (key.kind != Kind::kInt && key.kind != Kind::kUint) {
      return Fail(op, std::string("a dict key is ") + KindName(key.kind) +
                          " (only str and int keys map to JSON)");
    }
    char buf[24];
    auto [end, ec] = key.kind == Kind::kInt ? std::to_chars(buf, buf + sizeof buf, key.i)
                                            : std::to_chars(buf, buf + sizeof buf, key.u);
    RETURN_IF_ERROR(CountBytes(op, static_cast<std::size_t>(end - buf)));
    strings_.emplace_back(buf, end);
    return std::string_view(strings_.back());
  }

  Result<void> CheckTotals(std::size_t values, std::size_t bytes) const {
    if (values > limits_.max_values) {
      return Error("the pickle expands to more than " + std::to_string(limits_.max_values) +
                   " values through its memo references (Limits::max_values)");
    }
    if (bytes > limits_.max_bytes) {
      return Error("the pickle expands to more than " + std::to_string(limits_.max_bytes) +
                   " bytes of strings through its memo references (Limits::max_bytes)");
    }
    return Ok();
  }

  // Height, values and bytes of container `index` in the output, found depth first; `depth`
  // counts the containers from the root down to this one. Recurses at most max_depth deep.
  Result<void> Measure(std::size_t index, std::size_t depth) {
    Container& c = containers_[index];
    if (c.state == Container::State::kOpen) {
      return Error(std::string("the pickle's data is not a tree: ") + KindName(c.kind) +
                   " contains itself (JSON cannot hold a cycle)");
    }
    if (c.state == Container::State::kUnseen) {
      if (depth > limits_.max_depth) return DepthError();
      c.state = Container::State::kOpen;
      std::size_t height = 0;
      std::size_t values = 1;
      std::size_t bytes = 0;
      auto add = [&](const Value& v) -> Result<void> {
        if (IsContainer(v)) {
          RETURN_IF_ERROR(Measure(v.index, depth + 1));
          const Container& child = containers_[v.index];
          height = std::max(height, child.height);
          values = SaturatingAdd(values, child.values);
          bytes = SaturatingAdd(bytes, child.bytes);
        } else {
          values = SaturatingAdd(values, 1);
          if (v.kind == Kind::kStr || v.kind == Kind::kBytes)
            bytes = SaturatingAdd(bytes, strings_[v.index].size());
        }
        return CheckTotals(values, bytes);
      };
      for (const Value& v : c.items) RETURN_IF_ERROR(add(v));
      for (const auto& [key, v] : c.entries) {
        bytes = SaturatingAdd(bytes, key.size());
        RETURN_IF_ERROR(add(v));
      }
      c.height = height + 1;
      c.values = values;
      c.bytes = bytes;
      c.state = Container::State::kDone;
    }
    if (depth - 1 + c.height > limits_.max_depth) return DepthError();
    return Ok();
  }

  Error DepthError() const {
    return Error("containers nested more than " + std::to_string(limits_.max_depth) +
                 " deep (Limits::max_depth)");
  }

  // Recurses as deep as Measure allowed.
  nlohmann::json ToJson(const Value& v) const {
    switch (v.kind) {
      case Kind::kNone:
        return nullptr;
      case Kind::kBool:
        return v.b;
      case Kind::kInt:
        return v.i;
      case Kind::kUint:
        return v.u;
      case Kind::kFloat:
        return v.f;
      case Kind::kStr:
        return strings_[v.index];
      case Kind::kBytes: {
        const std::string& s = strings_[v.index];
        return nlohmann::json::binary(std::vector<std::uint8_t>(s.begin(), s.end()));
      }
      case Kind::kList:
      case Kind::kTuple: {
        nlohmann::json array = nlohmann::json::array();
        const Container& c = containers_[v.index];
        array.get_ref<nlohmann::json::array_t&>().reserve(c.items.size());
        for (const Value& item : c.items) array.push_back(ToJson(item));
        return array;
      }
      case Kind::kDict: {
        nlohmann::json object = nlohmann::json::object();
        for (const auto& [key, value] : containers_[v.index].entries)
          object.emplace(std::string(key), ToJson(value));
        return object;
      }
    }
    return nullptr;
  }

  const std::string_view data_;
  const Limits limits_;
  std::vector<Value> stack_;
  std::vector<std::size_t> marks_;  // stack sizes at each open MARK
  std::unordered_map<uint64_t, Value> memo_;
  std::deque<std::string> strings_;  // text and bytes; a deque keeps dict keys' views valid
  std::deque<Container> containers_;
  std::size_t pushed_ = 0;
  std::size_t decoded_bytes_ = 0;
};

}  // namespace

Result<nlohmann::json> Decode(std::string_view data, const Limits& limits) {
  try {
    return Decoder(data, limits).Run();
  } catch (const std::bad_alloc&) {
    return Error("out of memory decoding a pickle of " + std::to_string(data.size()) + " bytes");
  } catch (const std::exception& e) {
    return Error(std::string("decoding the pickle failed: ") + e.what());
  }
}

}  // namespace rs::pickle
