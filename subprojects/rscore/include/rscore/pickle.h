// A Python pickle decoder that executes nothing: PyTorch's Flight Recorder dumps (written by
// torch::jit::Pickler at protocol 2) and any pickle of plain data that Python's `pickle` module
// writes at protocols 0 to 5, decoded into JSON values. Python's own pickle.load imports and
// calls whatever a file names; Decode only builds data, and refuses a file that asks for more.
//
// Accepted, the opcodes that build plain data (pickletools' names):
//   framing   PROTO (protocol 0-5), FRAME (its length must fit in the input; frames are
//             otherwise ignored, as CPython's unpickler does), STOP
//   stack     MARK, POP, POP_MARK, DUP
//   None/bool NONE, NEWTRUE, NEWFALSE, INT's "I01\n" / "I00\n"
//   integers  INT, LONG (decimal text with an optional sign and no leading zero, which
//             CPython would read as octal; LONG's trailing 'L'), BININT, BININT1, BININT2,
//             LONG1, LONG4
//   floats    FLOAT (the decimal text of Python's repr, "inf" and "nan" included), BINFLOAT
//   str       UNICODE (raw-unicode-escape), BINUNICODE, SHORT_BINUNICODE, BINUNICODE8; and
//             Python 2's STRING (a quoted, backslash-escaped literal), BINSTRING and
//             SHORT_BINSTRING: these are text too (Python 3's pickle.load makes them str), so
//             they decode to strings; their bytes must be UTF-8
//   bytes     BINBYTES, SHORT_BINBYTES, BINBYTES8, BYTEARRAY8
//   list      EMPTY_LIST, LIST, APPEND, APPENDS (to a list only)
//   tuple     EMPTY_TUPLE, TUPLE, TUPLE1, TUPLE2, TUPLE3
//   dict      EMPTY_DICT, DICT, SETITEM, SETITEMS (into a dict only)
//   memo      PUT, BINPUT, LONG_BINPUT, MEMOIZE, GET, BINGET, LONG_BINGET
//
// Mapping: dict -> object; list and tuple -> array; str -> string (valid UTF-8: no surrogates,
// no overlong forms); bytes and bytearray -> nlohmann::json::binary; int -> int64, or uint64
// when positive and above INT64_MAX (an int that needs more than 64 bits is an error);
// float -> number (NaN and infinities stay so in the json value; its dump() writes null);
// bool; None -> null. Dict keys: a str as it is, an int as its decimal text; any other key is an
// error. When two keys meet (also 1 and "1"), the last one set wins, as in Python.
//
// Refused, before any opcode runs (the whole opcode stream is checked first): GLOBAL,
// STACK_GLOBAL, INST, REDUCE, BUILD, OBJ, NEWOBJ, NEWOBJ_EX (they import and call Python
// objects), EXT1/2/4 (the extension registry), PERSID, BINPERSID (persistent ids),
// NEXT_BUFFER, READONLY_BUFFER (out-of-band buffers), EMPTY_SET, ADDITEMS, FROZENSET (sets:
// a dump holds none, JSON has none), and every byte that is no opcode of protocols 0-5. The
// error names the offset, the opcode and its byte, and for GLOBAL and INST what it would
// import:
//   offset 2: opcode GLOBAL (0x63) would import posix.system: refused (a dump holds only
//   dicts, lists, tuples, strings, bytes, numbers, booleans and None)
// Note that Python's pickle writes bytes at protocols 0-2, bytearray at 0-4 and any object
// other than the types above as such calls, and torch::jit::Pickler its typed lists
// (List[int], tensors) through GLOBAL torch.jit._pickle + REDUCE: those pickles are refused.
// The Flight Recorder's dump holds generic dicts and lists only.
//
// Also errors (naming the opcode's offset where there is one): an operand running past the
// end of the input (lengths are checked before anything is allocated), a pickle without STOP,
// bytes after STOP (a dump file holds one pickle), stack underflow (an opcode never reaches
// below the MARK it runs above), an opcode that needs a MARK without one, STOP with other than
// one value on the stack or with a MARK left open, a GET of a memo entry never PUT, APPEND to
// anything but a list, SETITEM into anything but a dict, an odd number of items for DICT or
// SETITEMS.
//
// Memo references share containers, as in Python: a list stored by PUT, fetched by GET and
// appended to later holds those items wherever it appears, and the same dict may appear many
// times. So the decoder first builds nodes that the memo may share, and converts them to JSON
// at STOP: a container that contains itself is an error (JSON cannot hold a cycle), and the
// output is counted as the memo expands it before any of it is built, so that a few bytes of
// references cannot make gigabytes ("billion laughs"): see Limits. Recursion is bounded by
// Limits::max_depth.
#pragma once

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

#include "rscore/result.h"

namespace rs::pickle {

struct Limits {
  // Containers nested inside each other, counting the outermost: [[]] is 2 deep.
  std::size_t max_depth = 256;
  // Values in the output, as the memo expands them (every container, key's value and item
  // counts one), and values pushed while decoding.
  std::size_t max_values = 50'000'000;
  // Bytes of str and bytes payload in the output (dict keys included), as the memo expands
  // them, and bytes decoded from the input.
  std::size_t max_bytes = std::size_t{1} << 30;
};

// Decodes one pickle into JSON values, as described above. Nothing is imported or called.
// Errors name the byte offset in `data`; the caller prefixes the file name (Error::Wrap).
Result<nlohmann::json> Decode(std::string_view data, const Limits& limits = {});

}  // namespace rs::pickle
