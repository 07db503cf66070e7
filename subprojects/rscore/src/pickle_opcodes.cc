#include "pickle_opcodes.h"

#include <array>
#include <bit>
#include <charconv>
#include <cstdio>
#include <limits>

namespace rs::pickle {
namespace {

enum class Operand : uint8_t {
  kNone,
  kFixed,          // `width` bytes
  kLine,           // text up to '\n'
  kTwoLines,       // module '\n' name '\n'
  kCounted,        // unsigned little-endian length of `width` bytes, then that many bytes
  kCountedSigned,  // the same with a signed 4-byte length (negative is an error)
};

struct OpInfo {
  uint8_t code;
  const char* name;
  Operand operand;
  uint8_t width;
  const char* refused;  // what the opcode would do, for a refused one; else nullptr
};

constexpr const char* kImports = "would import a module attribute";
constexpr const char* kSet = "would build a set";

// Every opcode of protocols 0-5 (Python's pickletools lists them with their operands).
constexpr OpInfo kOps[] = {
    {'(', "MARK", Operand::kNone, 0, nullptr},
    {'.', "STOP", Operand::kNone, 0, nullptr},
    {'0', "POP", Operand::kNone, 0, nullptr},
    {'1', "POP_MARK", Operand::kNone, 0, nullptr},
    {'2', "DUP", Operand::kNone, 0, nullptr},
    {'F', "FLOAT", Operand::kLine, 0, nullptr},
    {'I', "INT", Operand::kLine, 0, nullptr},
    {'J', "BININT", Operand::kFixed, 4, nullptr},
    {'K', "BININT1", Operand::kFixed, 1, nullptr},
    {'L', "LONG", Operand::kLine, 0, nullptr},
    {'M', "BININT2", Operand::kFixed, 2, nullptr},
    {'N', "NONE", Operand::kNone, 0, nullptr},
    {'P', "PERSID", Operand::kLine, 0, "would load an object by its persistent id"},
    {'Q', "BINPERSID", Operand::kNone, 0, "would load an object by its persistent id"},
    {'R', "REDUCE", Operand::kNone, 0, "would call an object"},
    {'S', "STRING", Operand::kLine, 0, nullptr},
    {'T', "BINSTRING", Operand::kCountedSigned, 4, nullptr},
    {'U', "SHORT_BINSTRING", Operand::kCounted, 1, nullptr},
    {'V', "UNICODE", Operand::kLine, 0, nullptr},
    {'X', "BINUNICODE", Operand::kCounted, 4, nullptr},
    {'a', "APPEND", Operand::kNone, 0, nullptr},
    {'b', "BUILD", Operand::kNone, 0, "would set an object's state"},
    {'c', "GLOBAL", Operand::kTwoLines, 0, kImports},
    {'d', "DICT", Operand::kNone, 0, nullptr},
    {'}', "EMPTY_DICT", Operand::kNone, 0, nullptr},
    {'e', "APPENDS", Operand::kNone, 0, nullptr},
    {'g', "GET", Operand::kLine, 0, nullptr},
    {'h', "BINGET", Operand::kFixed, 1, nullptr},
    {'i', "INST", Operand::kTwoLines, 0, kImports},
    {'j', "LONG_BINGET", Operand::kFixed, 4, nullptr},
    {'l', "LIST", Operand::kNone, 0, nullptr},
    {']', "EMPTY_LIST", Operand::kNone, 0, nullptr},
    {'o', "OBJ", Operand::kNone, 0, "would call a class"},
    {'p', "PUT", Operand::kLine, 0, nullptr},
    {'q', "BINPUT", Operand::kFixed, 1, nullptr},
    {'r', "LONG_BINPUT", Operand::kFixed, 4, nullptr},
    {'s', "SETITEM", Operand::kNone, 0, nullptr},
    {'t', "TUPLE", Operand::kNone, 0, nullptr},
    {')', "EMPTY_TUPLE", Operand::kNone, 0, nullptr},
    {'u', "SETITEMS", Operand::kNone, 0, nullptr},
    {'G', "BINFLOAT", Operand::kFixed, 8, nullptr},
    {0x80, "PROTO", Operand::kFixed, 1, nullptr},
    {0x81, "NEWOBJ", Operand::kNone, 0, "would create an instance of a class"},
    {0x82, "EXT1", Operand::kFixed, 1, "would import an object from the extension registry"},
    {0x83, "EXT2", Operand::kFixed, 2, "would import an object from the extension registry"},
    {0x84, "EXT4", Operand::kFixed, 4, "would import an object from the extension registry"},
    {0x85, "TUPLE1", Operand::kNone, 0, nullptr},
    {0x86, "TUPLE2", Operand::kNone, 0, nullptr},
    {0x87, "TUPLE3", Operand::kNone, 0, nullptr},
    {0x88, "NEWTRUE", Operand::kNone, 0, nullptr},
    {0x89, "NEWFALSE", Operand::kNone, 0, nullptr},
    {0x8a, "LONG1", Operand::kCounted, 1, nullptr},
    {0x8b, "LONG4", Operand::kCountedSigned, 4, nullptr},
    {'B', "BINBYTES", Operand::kCounted, 4, nullptr},
    {'C', "SHORT_BINBYTES", Operand::kCounted, 1, nullptr},
    {0x8c, "SHORT_BINUNICODE", Operand::kCounted, 1, nullptr},
    {0x8d, "BINUNICODE8", Operand::kCounted, 8, nullptr},
    {0x8e, "BINBYTES8", Operand::kCounted, 8, nullptr},
    {0x8f, "EMPTY_SET", Operand::kNone, 0, kSet},
    {0x90, "ADDITEMS", Operand::kNone, 0, kSet},
    {0x91, "FROZENSET", Operand::kNone, 0, kSet},
    {0x92, "NEWOBJ_EX", Operand::kNone, 0, "would create an instance of a class"},
    {0x93, "STACK_GLOBAL", Operand::kNone, 0, "would import a module attribute named on the stack"},
    {0x94, "MEMOIZE", Operand::kNone, 0, nullptr},
    {0x95, "FRAME", Operand::kFixed, 8, nullptr},
    {0x96, "BYTEARRAY8", Operand::kCounted, 8, nullptr},
    {0x97, "NEXT_BUFFER", Operand::kNone, 0, "would take an out-of-band buffer"},
    {0x98, "READONLY_BUFFER", Operand::kNone, 0, "would take an out-of-band buffer"},
};

const std::array<const OpInfo*, 256> kByCode = [] {
  std::array<const OpInfo*, 256> by_code{};
  for (const OpInfo& info : kOps) by_code[info.code] = &info;
  return by_code;
}();

std::string Hex(uint8_t code) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", code);
  return buf;
}

std::string At(std::size_t offset) { return "offset " + std::to_string(offset) + ": "; }

Error Refuse(std::string_view data, const Op& op, const OpInfo& info) {
  std::string what = info.refused;
  if (info.operand == Operand::kTwoLines) {
    // GLOBAL and INST name what they would import in their two lines.
    std::size_t module_end = data.find('\n', op.offset + 1);
    std::size_t name_end =
        module_end == std::string_view::npos ? module_end : data.find('\n', module_end + 1);
    if (name_end != std::string_view::npos) {
      std::string_view module = data.substr(op.offset + 1, module_end - op.offset - 1);
      std::string_view name = data.substr(module_end + 1, name_end - module_end - 1);
      what = "would import " + Printable(module) + "." + Printable(name);
    }
    if (op.code == 'i') what += " and call it";
  }
  return Error(At(op.offset) + "opcode " + info.name + " (" + Hex(op.code) + ") " + what +
               ": refused (a dump holds only dicts, lists, tuples, strings, bytes, numbers, "
               "booleans and None)");
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

Result<Op> ReadOp(std::string_view data, std::size_t offset) {
  const uint8_t code = static_cast<uint8_t>(data[offset]);
  const OpInfo* info = kByCode[code];
  if (info == nullptr) {
    return Error(At(offset) + "unknown opcode " + Hex(code) +
                 ": refused (no opcode of pickle protocols 0-5: not a pickle, or a damaged one)");
  }
  Op op{offset, offset + 1, code, info->name, {}};
  if (info->refused != nullptr) return Refuse(data, op, *info);
  // Errors only: most opcodes need no message.
  auto fail = [&](const std::string& what) { return Error(At(offset) + info->name + ": " + what); };
  const std::size_t pos = offset + 1;
  const std::size_t left = data.size() - pos;
  auto truncated = [&](std::size_t need) {
    return fail("the input ends inside the operand (" + std::to_string(need) + " bytes needed, " +
                std::to_string(left) + " left)");
  };
  switch (info->operand) {
    case Operand::kNone:
      break;
    case Operand::kFixed:
      if (left < info->width) return truncated(info->width);
      op.arg = data.substr(pos, info->width);
      op.end = pos + info->width;
      break;
    case Operand::kLine:
    case Operand::kTwoLines: {
      std::size_t nl = data.find('\n', pos);
      if (nl != std::string_view::npos && info->operand == Operand::kTwoLines)
        nl = data.find('\n', nl + 1);
      if (nl == std::string_view::npos)
        return fail("the input ends inside the text operand (no newline)");
      op.arg = data.substr(pos, nl - pos);
      op.end = nl + 1;
      break;
    }
    case Operand::kCounted:
    case Operand::kCountedSigned: {
      if (left < info->width) return truncated(info->width);
      const uint64_t length = ReadLE(data.substr(pos, info->width));
      if (info->operand == Operand::kCountedSigned && length > 0x7fffffff)
        return fail("negative length");
      if (length > left - info->width) {
        return fail("length " + std::to_string(length) + " runs past the end of the input (" +
                    std::to_string(left - info->width) + " bytes left)");
      }
      op.arg = data.substr(pos + info->width, length);
      op.end = pos + info->width + length;
      break;
    }
  }
  if (code == kFrame) {
    const uint64_t length = ReadLE(op.arg);
    if (length > data.size() - op.end) {
      return fail("a frame of " + std::to_string(length) +
                  " bytes runs past the end of the input (" + std::to_string(data.size() - op.end) +
                  " bytes left)");
    }
  }
  return op;
}

std::optional<Integer> ParseDecimal(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  uint64_t magnitude = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (magnitude > (std::numeric_limits<uint64_t>::max() - digit) / 10) return std::nullopt;
    magnitude = magnitude * 10 + digit;
  }
  if (negative && magnitude > (uint64_t{1} << 63)) return std::nullopt;
  return Integer{negative && magnitude != 0, magnitude};
}

std::optional<Integer> DecodeLittleEndian(std::string_view bytes) {
  if (bytes.empty()) return Integer{};
  const bool negative = static_cast<uint8_t>(bytes.back()) & 0x80;
  const uint8_t fill = negative ? 0xff : 0x00;
  // Bytes past the eighth only repeat the sign.
  for (std::size_t i = 8; i < bytes.size(); ++i)
    if (static_cast<uint8_t>(bytes[i]) != fill) return std::nullopt;
  uint64_t raw = ReadLE(bytes.substr(0, 8));
  if (negative) {
    if (bytes.size() < 8) raw |= ~uint64_t{0} << (8 * bytes.size());  // sign-extend
    if (!(raw >> 63)) return std::nullopt;                            // below -2^63
    return Integer{true, ~raw + 1};
  }
  return Integer{false, raw};
}

uint64_t ReadLE(std::string_view bytes) {
  uint64_t v = 0;
  for (std::size_t i = 0; i < bytes.size() && i < 8; ++i)
    v |= uint64_t{static_cast<uint8_t>(bytes[i])} << (8 * i);
  return v;
}

double ReadBinFloat(std::string_view bytes) {
  uint64_t bits = 0;
  for (char c : bytes.substr(0, 8)) bits = bits << 8 | static_cast<uint8_t>(c);
  return std::bit_cast<double>(bits);
}

std::optional<double> ParseFloat(std::string_view text) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

bool IsUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    uint32_t cp = 0;
    uint32_t min = 0;
    if ((c & 0xE0) == 0xC0) {
      length = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (s.size() - i < length) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const uint8_t b = static_cast<uint8_t>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = cp << 6 | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += length;
  }
  return true;
}

Result<std::string> DecodeRawUnicodeEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const uint8_t c = static_cast<uint8_t>(text[i++]);
    const int digits = c != '\\' || i == text.size() ? 0
                       : text[i] == 'u'              ? 4
                       : text[i] == 'U'              ? 8
                                                     : 0;
    if (digits == 0) {
      AppendUtf8(out, c);  // Latin-1
      if (c == '\\' && i < text.size()) AppendUtf8(out, static_cast<uint8_t>(text[i++]));
      continue;
    }
    ++i;
    uint32_t cp = 0;
    for (int k = 0; k < digits; ++k, ++i) {
      const int d = i < text.size() ? HexDigit(text[i]) : -1;
      if (d < 0) {
        return Error("truncated \\" + std::string(digits == 4 ? "uXXXX" : "UXXXXXXXX") +
                     " escape at byte " + std::to_string(i));
      }
      cp = cp << 4 | static_cast<uint32_t>(d);
    }
    if (cp > 0x10FFFF) return Error("\\U escape out of range before byte " + std::to_string(i));
    if (cp >= 0xD800 && cp <= 0xDFFF)
      return Error("a surrogate code point (\\u escape before byte " + std::to_string(i) +
                   "), which is not valid UTF-8");
    AppendUtf8(out, cp);
  }
  return out;
}

Result<std::string> DecodeQuotedString(std::string_view text) {
  if (text.size() < 2 || text.front() != text.back() ||
      (text.front() != '\'' && text.front() != '"'))
    return Error("the operand is not a quoted string");
  const std::string_view body = text.substr(1, text.size() - 2);
  std::string out;
  out.reserve(body.size());
  std::size_t i = 0;
  while (i < body.size()) {
    char c = body[i++];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (i == body.size()) return Error("the string ends in a lone backslash");
    c = body[i++];
    switch (c) {
      case '\n':
        break;  // a line continuation
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x': {
        const int hi = i < body.size() ? HexDigit(body[i]) : -1;
        const int lo = i + 1 < body.size() ? HexDigit(body[i + 1]) : -1;
        if (hi < 0 || lo < 0) return Error("invalid \\x escape at byte " + std::to_string(i));
        out += static_cast<char>(hi << 4 | lo);
        i += 2;
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          // Up to three octal digits; Python keeps the low byte of a larger value.
          int v = c - '0';
          for (int k = 0; k < 2 && i < body.size() && body[i] >= '0' && body[i] <= '7'; ++k)
            v = v * 8 + (body[i++] - '0');
          out += static_cast<char>(v & 0xFF);
        } else {
          out += '\\';  // not an escape: kept, as Python does
          out += c;
        }
    }
  }
  return out;
}

std::string Printable(std::string_view s, std::size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<uint8_t>(c));
      out += buf;
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

}  // namespace rs::pickle
