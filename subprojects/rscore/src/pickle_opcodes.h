// The pickle opcode stream for rscore/pickle.h: which opcodes there are, where each one's
// operand ends, which ones are refused, and the decoding of operands into numbers and text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rscore/result.h"

namespace rs::pickle {

// Opcode bytes (pickletools' names), those the decoder runs.
enum Code : uint8_t {
  kMark = '(',
  kStop = '.',
  kPop = '0',
  kPopMark = '1',
  kDup = '2',
  kFloat = 'F',
  kInt = 'I',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kLong = 'L',
  kBinInt2 = 'M',
  kNone = 'N',
  kString = 'S',
  kBinString = 'T',
  kShortBinString = 'U',
  kUnicode = 'V',
  kBinUnicode = 'X',
  kAppend = 'a',
  kDict = 'd',
  kEmptyDict = '}',
  kAppends = 'e',
  kGet = 'g',
  kBinGet = 'h',
  kLongBinGet = 'j',
  kList = 'l',
  kEmptyList = ']',
  kPut = 'p',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kEmptyTuple = ')',
  kSetItems = 'u',
  kBinFloat = 'G',
  kProto = 0x80,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kLong4 = 0x8b,
  kBinBytes = 'B',
  kShortBinBytes = 'C',
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kBinBytes8 = 0x8e,
  kMemoize = 0x94,
  kFrame = 0x95,
  kByteArray8 = 0x96,
};

// One opcode as read from the input: `arg` is its operand without length prefix or newline
// (for a text operand, the line; for a length-prefixed one, the payload; else the raw bytes).
struct Op {
  std::size_t offset = 0;  // of the opcode byte
  std::size_t end = 0;     // of the operand: where the next opcode starts
  uint8_t code = 0;
  const char* name = "";
  std::string_view arg;
};

// Reads the opcode at `offset` (< data.size()) and finds its operand's end, checked against
// the input before anything is allocated. A refused or unknown opcode is an error that says why.
Result<Op> ReadOp(std::string_view data, std::size_t offset);

// A whole number that fits in 64 bits: an int64 when `negative`, else up to UINT64_MAX.
struct Integer {
  bool negative = false;
  uint64_t magnitude = 0;  // at most 2^63 when negative
};
// Decimal text with an optional sign ("-12", "+7", "18446744073709551615").
std::optional<Integer> ParseDecimal(std::string_view text);
// LONG1 / LONG4's little-endian two's complement; empty is 0.
std::optional<Integer> DecodeLittleEndian(std::string_view bytes);

// Little-endian unsigned integer of bytes.size() <= 8 bytes.
uint64_t ReadLE(std::string_view bytes);
// Big-endian IEEE 754 double (BINFLOAT).
double ReadBinFloat(std::string_view bytes);
// FLOAT's text ("0.1", "-1e+300", "inf", "nan").
std::optional<double> ParseFloat(std::string_view text);

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool IsUtf8(std::string_view s);
// UNICODE's raw-unicode-escape text as UTF-8: bytes are Latin-1 code points except for
// \uXXXX and \UXXXXXXXX. An error says what is wrong.
Result<std::string> DecodeRawUnicodeEscape(std::string_view text);
// STRING's operand, a quoted literal with Python's backslash escapes, as bytes.
Result<std::string> DecodeQuotedString(std::string_view text);

// `s` for an error message: printable ASCII as it is, other bytes as \xHH, at most `max` bytes.
std::string Printable(std::string_view s, std::size_t max = 100);

}  // namespace rs::pickle
