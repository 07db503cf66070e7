#include "rscore/pickle.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace rs::pickle {
namespace {

using nlohmann::json;
using namespace std::string_literals;

// Pickle pieces, so that payload bytes never run into a C++ hex escape.
std::string Le(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>(v >> (8 * i) & 0xff);
  return s;
}
std::string Str(std::string_view s) {  // SHORT_BINUNICODE
  return "\x8c"s + static_cast<char>(s.size()) + std::string(s);
}
std::string Int1(uint8_t n) { return "K"s + static_cast<char>(n); }  // BININT1
std::string Put(uint8_t i) { return "q"s + static_cast<char>(i); }   // BINPUT
std::string Get(uint8_t i) { return "h"s + static_cast<char>(i); }   // BINGET
std::string Repeat(const std::string& s, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

json Decoded(std::string_view pickle) {
  Result<json> r = Decode(pickle);
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r.ok() ? *r : json("<error>");
}

std::string ErrorOf(std::string_view pickle, const Limits& limits = {}) {
  Result<json> r = Decode(pickle, limits);
  return r.ok() ? "<decoded: " + r->dump() + ">" : r.error().message();
}

TEST(Pickle, NoneAndBooleans) {
  EXPECT_EQ(Decoded("N."), json(nullptr));
  EXPECT_EQ(Decoded("\x88."), json(true));
  EXPECT_EQ(Decoded("\x89."), json(false));
  EXPECT_EQ(Decoded("I01\n."), json(true));  // protocol 0's booleans
  EXPECT_EQ(Decoded("I00\n."), json(false));
  EXPECT_TRUE(Decoded("I01\n.").is_boolean());
}

TEST(Pickle, Integers) {
  EXPECT_EQ(Decoded("I-42\n."), json(-42));
  EXPECT_EQ(Decoded("I7\n."), json(7));
  EXPECT_EQ(Decoded("L9223372036854775807L\n."), json(INT64_MAX));
  EXPECT_EQ(Decoded("L-9223372036854775808L\n."), json(INT64_MIN));
  EXPECT_EQ(Decoded("L18446744073709551615L\n."), json(UINT64_MAX));
  EXPECT_TRUE(Decoded("L18446744073709551615L\n.").is_number_unsigned());
  EXPECT_TRUE(Decoded("I5\n.").is_number_integer());
  EXPECT_EQ(Decoded("L12\n."), json(12));  // the trailing L is optional
  EXPECT_EQ(Decoded("J" + Le(0xffffffff, 4) + "."), json(-1));
  EXPECT_EQ(Decoded("J" + Le(0x7fffffff, 4) + "."), json(INT32_MAX));
  EXPECT_EQ(Decoded("K\xff."), json(255));
  EXPECT_EQ(Decoded("M" + Le(0xfffe, 2) + "."), json(65534));
  // LONG1 / LONG4: little-endian two's complement.
  EXPECT_EQ(Decoded("\x8a"s + '\0' + "."), json(0));
  EXPECT_EQ(Decoded("\x8a\x01\xff."), json(-1));
  EXPECT_EQ(Decoded("\x8a\x03" + Le(32768, 3) + "."), json(32768));
  EXPECT_EQ(Decoded("\x8a\x02" + Le(32768, 2) + "."), json(-32768));
  EXPECT_EQ(Decoded("\x8a\x08" + Le(uint64_t{1} << 63, 8) + "."), json(INT64_MIN));
  EXPECT_EQ(Decoded("\x8a\x09" + Le(UINT64_MAX, 8) + '\0' + "."), json(UINT64_MAX));
  EXPECT_EQ(Decoded("\x8a\x0a" + Le(5, 8) + "\0\0."s), json(5));  // redundant sign bytes
  EXPECT_EQ(Decoded("\x8a\x0a" + Le(UINT64_MAX - 4, 8) + "\xff\xff."), json(-5));
  EXPECT_EQ(Decoded("\x8b" + Le(2, 4) + Le(256, 2) + "."), json(256));
}

TEST(Pickle, IntegersOver64BitsAreErrors) {
  EXPECT_EQ(ErrorOf("L18446744073709551616L\n."),
            "offset 0: LONG: not an integer of at most 64 bits: '18446744073709551616L'");
  EXPECT_NE(ErrorOf("L-9223372036854775809\n.").find("at most 64 bits"), std::string::npos);
  EXPECT_NE(ErrorOf("\x8a\x09" + Le(0, 8) + "\x01.").find("at most 64 bits"), std::string::npos);
  // -2^63 - 1: the low eight bytes look positive.
  EXPECT_NE(ErrorOf("\x8a\x09" + Le(INT64_MAX, 8) + "\xff.").find("at most 64 bits"),
            std::string::npos);
  EXPECT_NE(ErrorOf("I 1\n.").find("not an integer"), std::string::npos);
  EXPECT_NE(ErrorOf("I1_000\n.").find("not an integer"), std::string::npos);
  // CPython reads INT and LONG in base 0: "017" would be octal 15 there, or an error.
  EXPECT_EQ(ErrorOf("I017\n."),
            "offset 0: INT: a leading zero in '017' (CPython reads it as octal, or not at all)");
  EXPECT_NE(ErrorOf("L-00L\n.").find("a leading zero"), std::string::npos);
  EXPECT_NE(ErrorOf("I0x10\n.").find("a leading zero"), std::string::npos);
  EXPECT_EQ(Decoded("I0\n."), json(0));
  EXPECT_EQ(Decoded("I-0\n."), json(0));
  EXPECT_NE(ErrorOf("I\n.").find("not an integer"), std::string::npos);
}

TEST(Pickle, Floats) {
  EXPECT_EQ(Decoded("F0.1\n."), json(0.1));
  EXPECT_EQ(Decoded("F-1e+300\n."), json(-1e300));
  EXPECT_EQ(Decoded("F-inf\n.").get<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(Decoded("Fnan\n.").get<double>()));
  EXPECT_EQ(Decoded("G\x3f\xf8" + Le(0, 6) + "."), json(1.5));
  EXPECT_EQ(Decoded("G\xc0\x09\x21\xfb\x54\x44\x2d\x18."), json(-3.141592653589793));
  EXPECT_EQ(ErrorOf("F1.5x\n."), "offset 0: FLOAT: not a float: '1.5x'");
}

TEST(Pickle, Strings) {
  EXPECT_EQ(Decoded("X" + Le(3, 4) + "abc."), json("abc"));
  EXPECT_EQ(Decoded(Str("\xc3\x9f\xe2\x86\x92\xe2\x9c\x93") + "."), json("ß→✓"));
  EXPECT_EQ(Decoded("\x8d" + Le(2, 8) + "hi."), json("hi"));
  EXPECT_EQ(Decoded(Str("a\0b"s) + "."), json("a\0b"s));
  // Python 2's str: text too.
  EXPECT_EQ(Decoded("T" + Le(2, 4) + "hi."), json("hi"));
  EXPECT_EQ(Decoded("U\x02hi."), json("hi"));
  EXPECT_EQ(Decoded("S'a\\nb\\x41\\101\\'\\q\"'\n."), json("a\nbAA'\\q\""));
  EXPECT_EQ(Decoded("S\"it's\"\n."), json("it's"));
  EXPECT_EQ(Decoded("S'\\303\\237'\n."), json("ß"));
  EXPECT_EQ(ErrorOf("Sabc\n."), "offset 0: STRING: the operand is not a quoted string");
  EXPECT_EQ(ErrorOf("S'a\\'\n."), "offset 0: STRING: the string ends in a lone backslash");
  EXPECT_NE(ErrorOf("S'\\x4'\n.").find("invalid \\x escape"), std::string::npos);
  EXPECT_EQ(ErrorOf("S'\\xff'\n."), "offset 0: STRING: the string is not valid UTF-8");
}

// Protocol 0's str: raw-unicode-escape, Latin-1 bytes and \u / \U escapes.
TEST(Pickle, RawUnicodeEscape) {
  EXPECT_EQ(Decoded("V\\u00df\\u2192\xe9\n."), json("ß→é"));
  EXPECT_EQ(Decoded("V\\U0001f600\n."), json("\xf0\x9f\x98\x80"));
  EXPECT_EQ(Decoded("V\\u005c\\u000a\n."), json("\\\n"));
  EXPECT_EQ(Decoded("V\\\\u0041\n."), json("\\\\u0041"));  // an escaped backslash, then text
  EXPECT_EQ(Decoded("Va\\x\\\n."), json("a\\x\\"));
  EXPECT_EQ(ErrorOf("V\\u12\n."), "offset 0: UNICODE: truncated \\uXXXX escape at byte 4");
  EXPECT_NE(ErrorOf("V\\U00110000\n.").find("out of range"), std::string::npos);
  EXPECT_NE(ErrorOf("V\\ud800\n.").find("surrogate"), std::string::npos);
}

TEST(Pickle, StringsMustBeUtf8) {
  for (std::string bad :
       {"\xff"s, "\xc0\xaf"s, "\xed\xa0\x80"s, "\xe6\x97"s, "\xf4\x90\x80\x80"s}) {
    EXPECT_EQ(ErrorOf(Str(bad) + "."), "offset 0: SHORT_BINUNICODE: the string is not valid UTF-8")
        << Str(bad);
  }
  EXPECT_EQ(Decoded(Str("\xf4\x8f\xbf\xbf") + "."), json("\xf4\x8f\xbf\xbf"));  // U+10FFFF
}

TEST(Pickle, BytesAreBinary) {
  const auto bin = [](std::string_view s) {
    return json::binary(std::vector<std::uint8_t>(s.begin(), s.end()));
  };
  EXPECT_EQ(Decoded("C\x03" + "a\0\xff"s + "."), bin("a\0\xff"s));
  EXPECT_EQ(Decoded("B" + Le(2, 4) + "\xc3\x28."), bin("\xc3\x28"));  // not UTF-8: fine
  EXPECT_EQ(Decoded("\x8e" + Le(1, 8) + "z."), bin("z"));
  EXPECT_EQ(Decoded("\x96" + Le(0, 8) + "."), bin(""));  // bytearray
  EXPECT_TRUE(Decoded("C\x01z.").is_binary());
}

TEST(Pickle, ListsAndTuples) {
  EXPECT_EQ(Decoded("]."), json::array());
  EXPECT_EQ(Decoded("](" + Int1(1) + Int1(2) + "e."), json({1, 2}));
  EXPECT_EQ(Decoded("]" + Int1(1) + "a" + Int1(2) + "a."), json({1, 2}));
  EXPECT_EQ(Decoded("(" + Int1(1) + "N" + "l."), json({1, nullptr}));
  EXPECT_EQ(Decoded(")."), json::array());
  EXPECT_EQ(Decoded("(" + Int1(1) + Int1(2) + Int1(3) + Int1(4) + "t."), json({1, 2, 3, 4}));
  EXPECT_EQ(Decoded(Int1(1) + "\x85."), json({1}));
  EXPECT_EQ(Decoded(Int1(1) + Int1(2) + "\x86."), json({1, 2}));
  EXPECT_EQ(Decoded(Int1(1) + Int1(2) + Int1(3) + "\x87."), json({1, 2, 3}));
  EXPECT_EQ(Decoded("](e."), json::array());  // APPENDS of nothing
  EXPECT_EQ(Decoded("](" + Str("x") + "](e" + "e."), json({"x", json::array()}));
}

TEST(Pickle, Dicts) {
  EXPECT_EQ(Decoded("}."), json::object());
  const json ab = {{"a", 1}, {"b", 2}};
  EXPECT_EQ(Decoded("}(" + Str("a") + Int1(1) + Str("b") + Int1(2) + "u."), ab);
  EXPECT_EQ(Decoded("(" + Str("a") + Int1(1) + Str("b") + Int1(2) + "d."), ab);
  EXPECT_EQ(Decoded("}" + Str("a") + Int1(1) + "s" + Str("b") + Int1(2) + "s."), ab);
  // Int keys become their decimal text; the last key set wins, as in Python.
  EXPECT_EQ(Decoded("}(" + Int1(5) + Str("x") + "J" + Le(0xffffffff, 4) + Str("y") + "u."),
            json({{"5", "x"}, {"-1", "y"}}));
  EXPECT_EQ(Decoded("}(" + Str("a") + Int1(1) + Str("a") + Int1(2) + "u."), json({{"a", 2}}));
  EXPECT_EQ(Decoded("}(" + Int1(1) + Str("int") + Str("1") + Str("str") + "u."),
            json({{"1", "str"}}));
  EXPECT_EQ(Decoded("}(" + "L18446744073709551615\n"s + "Nu."),
            json({{"18446744073709551615", nullptr}}));
}

TEST(Pickle, DictKeysOtherThanStrAndIntAreErrors) {
  EXPECT_EQ(ErrorOf("}(]Nu."),
            "offset 4: SETITEMS: a dict key is a list (only str and int keys map to JSON)");
  EXPECT_NE(ErrorOf("}\x88Ns.").find("a dict key is a bool"), std::string::npos);
  EXPECT_NE(ErrorOf("}NNs.").find("a dict key is None"), std::string::npos);
  EXPECT_NE(ErrorOf("(F1.5\nNd.").find("a dict key is a float"), std::string::npos);
  EXPECT_NE(ErrorOf("}C\x01zNs.").find("a dict key is a bytes object"), std::string::npos);
  EXPECT_NE(ErrorOf("})Ns.").find("a dict key is a tuple"), std::string::npos);
}

TEST(Pickle, ContainerOpcodesCheckTheirTarget) {
  EXPECT_EQ(ErrorOf("}Na."), "offset 2: APPEND: appends to a dict, not to a list");
  EXPECT_EQ(ErrorOf(")(Ne."), "offset 3: APPENDS: appends to a tuple, not to a list");
  EXPECT_EQ(ErrorOf("]NNs."), "offset 3: SETITEM: sets items in a list, not in a dict");
  EXPECT_EQ(ErrorOf("}(Nu."), "offset 3: SETITEMS: an odd number of keys and values");
  EXPECT_EQ(ErrorOf("(Nd."), "offset 2: DICT: an odd number of keys and values");
}

TEST(Pickle, StackOpcodes) {
  EXPECT_EQ(Decoded(Int1(1) + Int1(2) + "0."), json(1));                  // POP
  EXPECT_EQ(Decoded(Int1(1) + "(" + Int1(2) + Int1(3) + "1."), json(1));  // POP_MARK
  EXPECT_EQ(Decoded(Int1(1) + "(0."), json(1));          // POP on an empty MARK drops the MARK
  EXPECT_EQ(Decoded(Int1(4) + "2\x86."), json({4, 4}));  // DUP
  EXPECT_EQ(Decoded("\x80\x02N."), json(nullptr));
  EXPECT_EQ(Decoded("\x80\x05N."), json(nullptr));
  EXPECT_EQ(ErrorOf("\x80\x06N."), "offset 0: PROTO: protocol 6 (this decoder knows 0-5)");
}

TEST(Pickle, StackErrors) {
  EXPECT_EQ(ErrorOf("0N."), "offset 0: POP: stack underflow");
  EXPECT_EQ(ErrorOf("]a."), "offset 1: APPEND: stack underflow");
  EXPECT_EQ(ErrorOf("](a."), "offset 2: APPEND: stack underflow");  // never below the MARK
  EXPECT_EQ(ErrorOf("(Ne."), "offset 2: APPENDS: stack underflow (nothing below the MARK)");
  EXPECT_EQ(ErrorOf("N\x86."), "offset 1: TUPLE2: stack underflow");
  EXPECT_EQ(ErrorOf("2."), "offset 0: DUP: stack underflow");
  EXPECT_EQ(ErrorOf("q\x00N."s), "offset 0: BINPUT: stack underflow");
  EXPECT_EQ(ErrorOf("Nt."), "offset 1: TUPLE: no MARK to end");
  EXPECT_EQ(ErrorOf("N1."), "offset 1: POP_MARK: no MARK to end");
  EXPECT_EQ(ErrorOf("NN."), "offset 2: STOP: 2 values on the stack instead of 1");
  EXPECT_EQ(ErrorOf("."), "offset 0: STOP: 0 values on the stack instead of 1");
  EXPECT_EQ(ErrorOf("(N."), "offset 2: STOP: a MARK is still open");
}

TEST(Pickle, StopAndTrailingData) {
  EXPECT_EQ(ErrorOf(""), "the pickle ends after 0 bytes without STOP");
  EXPECT_EQ(ErrorOf("]N"), "the pickle ends after 2 bytes without STOP");
  EXPECT_EQ(ErrorOf("N.N."), "offset 2: 2 bytes after STOP (a dump holds one pickle)");
}

// The memo holds references: a container fetched again is the same container, with whatever
// was added to it later.
TEST(Pickle, MemoSharesContainers) {
  // L = []; outer = [L, L]; L.append(7)
  EXPECT_EQ(Decoded("(]" + Put(0) + Get(0) + "l" + Get(0) + Int1(7) + "a0."),
            json::parse("[[7], [7]]"));
  // The same dict under two keys, filled after the second reference.
  EXPECT_EQ(Decoded("}(" + Str("a") + "}" + Put(1) + Str("b") + Get(1) + "u" + Get(1) + Str("k") +
                    "Ns0."),
            json::parse(R"({"a": {"k": null}, "b": {"k": null}})"));
  // A tuple holding the list: the tuple sees the list's later items.
  EXPECT_EQ(Decoded("]" + Put(0) + "\x85" + Get(0) + Int1(3) + "a0."), json::parse("[[3]]"));
  // Text forms, MEMOIZE and the 4-byte forms.
  EXPECT_EQ(Decoded("]p12\nI1\nag12\n\x86."), json::parse("[[1], [1]]"));
  EXPECT_EQ(Decoded("]\x94" + Str("s") + "\x94" + "h\x01" + "\x87."),
            json({json::array(), "s", "s"}));
  EXPECT_EQ(Decoded("]r" + Le(70000, 4) + "j" + Le(70000, 4) + "\x86."),
            json({json::array(), json::array()}));
  // A later PUT to the same index replaces the entry.
  EXPECT_EQ(Decoded(Int1(1) + Put(0) + Int1(2) + Put(0) + Get(0) + "\x87."), json({1, 2, 2}));
}

TEST(Pickle, MemoErrors) {
  EXPECT_EQ(ErrorOf("N" + Get(3) + "."), "offset 1: BINGET: memo entry 3 is unset");
  EXPECT_EQ(ErrorOf("Ng-1\n."), "offset 1: GET: not a memo index: '-1'");
  EXPECT_EQ(ErrorOf("Np\n."), "offset 1: PUT: not a memo index: ''");
}

// Containers that contain themselves, directly or through others, have no JSON form.
TEST(Pickle, CyclesAreErrors) {
  const std::string want = "the pickle's data is not a tree: a list contains itself";
  EXPECT_EQ(ErrorOf("]" + Put(0) + Get(0) + "a.").find(want), 0u);
  EXPECT_EQ(ErrorOf("\x80\x02]q\x00h\x00"
                    "a."s)
                .find(want),
            0u);  // Python's l = []; l.append(l)
  EXPECT_NE(ErrorOf("}" + Put(0) + Str("a") + Get(0) + "s.").find("a dict contains itself"),
            std::string::npos);
  // L = []; T = (L,); L.append(T)
  EXPECT_NE(ErrorOf("]" + Put(0) + Get(0) + "\x85" + "a.").find("contains itself"),
            std::string::npos);
  // Deeper down: {"x": [ {"y": L} ]} with L appended to itself.
  EXPECT_NE(ErrorOf("}" + Str("x") + "]" + Put(0) + Get(0) + "a" + "s.").find("contains itself"),
            std::string::npos);
}

// A layout as torch::jit::Pickler writes a Flight Recorder dump: protocol 2, dicts filled by
// MARK ... SETITEMS, lists by MARK ... APPENDS, every str memoized and repeated by BINGET,
// 64-bit ints as 8-byte LONG1, floats as BINFLOAT.
TEST(Pickle, TorchPicklerLayout) {
  auto s = [](std::string_view text, uint8_t memo) {
    return "X" + Le(text.size(), 4) + std::string(text) + Put(memo);
  };
  const std::string entry0 =
      "}" + Put(10) + "(" + s("record_id", 1) + Int1(0) + s("state", 2) + s("completed", 3) +
      s("time_created_ns", 4) + "\x8a\x08" + Le(1700000000123456789, 8) + s("duration_ms", 5) +
      "G\x3f\xf8" + Le(0, 6) + s("input_sizes", 6) + "]" + Put(11) + "(]" + Put(12) + "(" +
      Int1(4) + "M" + Le(1024, 2) + "ee" + s("is_p2p", 7) + "\x89" + s("retired", 8) + "\x88" +
      s("pg_id", 9) + "N" + s("process_group", 13) + s("0", 14) + s("default", 15) + "\x86" +
      Put(16) + "u";
  // The second entry repeats keys and a value by reference.
  const std::string entry1 = "}" + Put(17) + "(" + Get(1) + Int1(1) + Get(2) + Get(3) + "u";
  const std::string pickle = "\x80\x02}" + Put(18) + "(" + s("version", 19) + s("2.4", 20) +
                             s("entries", 21) + "]" + Put(22) + "(" + entry0 + entry1 + "eu.";
  EXPECT_EQ(Decoded(pickle), json::parse(R"({
    "version": "2.4",
    "entries": [
      {"record_id": 0, "state": "completed", "time_created_ns": 1700000000123456789,
       "duration_ms": 1.5, "input_sizes": [[4, 1024]], "is_p2p": false, "retired": true,
       "pg_id": null, "process_group": ["0", "default"]},
      {"record_id": 1, "state": "completed"}
    ]})"));
}

// Hostile inputs. Every opcode that would import or call something is refused, and the
// whole input is checked before any opcode runs.
constexpr char kOnlyData[] =
    ": refused (a dump holds only dicts, lists, tuples, strings, bytes, numbers, booleans and "
    "None)";

TEST(PickleRefusal, GlobalNamesWhatItWouldImport) {
  EXPECT_EQ(ErrorOf("\x80\x02"
                    "cposix\nsystem\nq\x00(S'echo hi'\ntR."s),
            "offset 2: opcode GLOBAL (0x63) would import posix.system" + std::string(kOnlyData));
  EXPECT_EQ(ErrorOf("cos\nsystem\n(S'echo hi'\ntR."),
            "offset 0: opcode GLOBAL (0x63) would import os.system" + std::string(kOnlyData));
  EXPECT_EQ(
      ErrorOf("(ios\nsystem\nS'echo hi'\n."),
      "offset 1: opcode INST (0x69) would import os.system and call it" + std::string(kOnlyData));
  // Control bytes in the names are shown escaped; a GLOBAL without its lines says less.
  EXPECT_EQ(
      ErrorOf("cos\x1b[2J\nsystem\n."),
      "offset 0: opcode GLOBAL (0x63) would import os\\x1b[2J.system" + std::string(kOnlyData));
  EXPECT_EQ(ErrorOf("Ncos\n"), "offset 1: opcode GLOBAL (0x63) would import a module attribute" +
                                   std::string(kOnlyData));
}

TEST(PickleRefusal, RefusedBeforeAnythingRuns) {
  // The POP at offset 0 would underflow and the list is built before the REDUCE, but the
  // refusal comes first.
  EXPECT_EQ(ErrorOf("0](Ne)R."),
            "offset 6: opcode REDUCE (0x52) would call an object" + std::string(kOnlyData));
  // Anywhere before STOP, however deep in the data.
  const std::string nested =
      "}(" + Str("a") + "](" + Repeat(Int1(1), 100) + "cos\nsystem\n" + "eu.";
  EXPECT_NE(ErrorOf(nested).find("opcode GLOBAL (0x63) would import os.system"), std::string::npos);
}

TEST(PickleRefusal, EveryOpcodeThatIsNotData) {
  const struct {
    std::string pickle;
    std::string want;
  } cases[] = {
      {"\x80\x04" + Str("os") + Str("system") + "\x93.",
       "offset 14: opcode STACK_GLOBAL (0x93) would import a module attribute named on the "
       "stack"},
      {"N)R.", "offset 2: opcode REDUCE (0x52) would call an object"},
      {"}}b.", "offset 2: opcode BUILD (0x62) would set an object's state"},
      {"(No.", "offset 2: opcode OBJ (0x6f) would call a class"},
      {"N)\x81.", "offset 2: opcode NEWOBJ (0x81) would create an instance of a class"},
      {"N)}\x92.", "offset 3: opcode NEWOBJ_EX (0x92) would create an instance of a class"},
      {"Pid\n.", "offset 0: opcode PERSID (0x50) would load an object by its persistent id"},
      {"NQ.", "offset 1: opcode BINPERSID (0x51) would load an object by its persistent id"},
      {"\x82\x01.",
       "offset 0: opcode EXT1 (0x82) would import an object from the extension registry"},
      {"\x83\x01\x01.",
       "offset 0: opcode EXT2 (0x83) would import an object from the extension registry"},
      {"\x84" + Le(1, 4) + ".",
       "offset 0: opcode EXT4 (0x84) would import an object from the extension registry"},
      {"\x97.", "offset 0: opcode NEXT_BUFFER (0x97) would take an out-of-band buffer"},
      {"\x97\x98.", "offset 0: opcode NEXT_BUFFER (0x97) would take an out-of-band buffer"},
      {"N\x98.", "offset 1: opcode READONLY_BUFFER (0x98) would take an out-of-band buffer"},
      {"\x8f.", "offset 0: opcode EMPTY_SET (0x8f) would build a set"},
      {"\x8f(K\x01\x90.", "offset 0: opcode EMPTY_SET (0x8f) would build a set"},
      {"N(K\x01\x90.", "offset 4: opcode ADDITEMS (0x90) would build a set"},
      {"(K\x01\x91.", "offset 3: opcode FROZENSET (0x91) would build a set"},
  };
  for (const auto& c : cases) EXPECT_EQ(ErrorOf(c.pickle), c.want + kOnlyData) << c.pickle;
}

TEST(PickleRefusal, UnknownBytes) {
  const std::string why =
      ": refused (no opcode of pickle protocols 0-5: not a pickle, or a damaged one)";
  EXPECT_EQ(ErrorOf("N\xff."), "offset 1: unknown opcode 0xff" + why);
  EXPECT_EQ(ErrorOf("\x99."), "offset 0: unknown opcode 0x99" + why);
  EXPECT_EQ(ErrorOf("z"), "offset 0: unknown opcode 0x7a" + why);
  EXPECT_EQ(ErrorOf("\0."s), "offset 0: unknown opcode 0x00" + why);
  EXPECT_EQ(ErrorOf("{\"a\": 1}"), "offset 0: unknown opcode 0x7b" + why);  // JSON, not a pickle
}

TEST(PickleLimits, DeepNestingIsRefused) {
  // 100,000 lists, each appended to the one before.
  const std::string deep = Repeat("]", 100000) + Repeat("a", 99999) + ".";
  EXPECT_EQ(ErrorOf(deep), "containers nested more than 256 deep (Limits::max_depth)");
  auto nested = [](std::size_t n) { return Repeat("]", n) + Repeat("a", n - 1) + "."; };
  Result<json> at_limit = Decode(nested(256));
  ASSERT_TRUE(at_limit.ok()) << at_limit.error().message();
  std::size_t depth = 0;
  for (const json* j = &*at_limit; j != nullptr && j->is_array();
       j = j->empty() ? nullptr : &j->front())
    ++depth;
  EXPECT_EQ(depth, 256u);
  EXPECT_EQ(ErrorOf(nested(257)), "containers nested more than 256 deep (Limits::max_depth)");
  EXPECT_EQ(ErrorOf(nested(4), {.max_depth = 3}),
            "containers nested more than 3 deep (Limits::max_depth)");
}

// A container the memo shares counts at the depth of each place it appears.
TEST(PickleLimits, SharedContainersCountWhereTheyAppear) {
  // X = [[]]; [X, [X]]: X reaches depth 3 at its second place, its inner list depth 4.
  const std::string pickle = "(]]a" + Put(0) + "]" + Get(0) + "al.";
  EXPECT_EQ(ErrorOf(pickle, {.max_depth = 3}),
            "containers nested more than 3 deep (Limits::max_depth)");
  Result<json> r = Decode(pickle, {.max_depth = 4});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, json::parse("[[[]], [[[]]]]"));
}

// Memo references multiply the output: ten lists, each holding the one before ten times, are
// 10^10 values from a few hundred bytes. The decoder counts before it builds anything.
TEST(PickleLimits, BillionLaughsAreRefused) {
  std::string pickle = "(" + Repeat(Int1(0), 10) + "l" + Put(0) + "0";
  for (uint8_t k = 1; k < 10; ++k) pickle += "(" + Repeat(Get(k - 1), 10) + "l" + Put(k) + "0";
  pickle += Get(9) + ".";
  EXPECT_LT(pickle.size(), 300u);
  EXPECT_EQ(ErrorOf(pickle),
            "the pickle expands to more than 50000000 values through its memo references "
            "(Limits::max_values)");
  // Exactly at the limit: X = [0, 0]; (X, X) is 7 values.
  const std::string small = "(" + Int1(0) + Int1(0) + "l" + Put(0) + Get(0) + "\x86.";
  EXPECT_TRUE(Decode(small, {.max_values = 7}).ok());
  EXPECT_EQ(ErrorOf(small, {.max_values = 6}),
            "the pickle expands to more than 6 values through its memo references "
            "(Limits::max_values)");
  // Values pushed while decoding count too.
  EXPECT_EQ(ErrorOf("(NNNNl.", {.max_values = 3}),
            "offset 4: NONE: more than 3 values (Limits::max_values)");
}

TEST(PickleLimits, StringBytesAreCountedAsExpanded) {
  // One 1000-byte str, referenced 2000 times.
  const std::string refs =
      "(X" + Le(1000, 4) + std::string(1000, 'x') + Put(0) + Repeat(Get(0), 1999) + "l.";
  EXPECT_EQ(ErrorOf(refs, {.max_bytes = 1'000'000}),
            "the pickle expands to more than 1000000 bytes of strings through its memo "
            "references (Limits::max_bytes)");
  Result<json> r = Decode(refs, {.max_bytes = 2'000'000});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->size(), 2000u);
  // Dict keys count as well: {"k" * 600: None}, twice.
  const std::string keys =
      "}" + Put(0) + "X" + Le(600, 4) + std::string(600, 'k') + "Ns" + Get(0) + "\x86.";
  EXPECT_TRUE(Decode(keys, {.max_bytes = 1200}).ok());
  EXPECT_NE(ErrorOf(keys, {.max_bytes = 1199}).find("more than 1199 bytes"), std::string::npos);
  // And bytes decoded from the input.
  EXPECT_EQ(ErrorOf(Str("abcdefghijk") + ".", {.max_bytes = 10}),
            "offset 0: SHORT_BINUNICODE: more than 10 bytes of strings (Limits::max_bytes)");
}

// Lengths are checked against what is left of the input before anything is allocated.
TEST(PickleLimits, HugeLengthsInTinyInputs) {
  EXPECT_EQ(ErrorOf("X\xff\xff\xff\xff"),
            "offset 0: BINUNICODE: length 4294967295 runs past the end of the input (0 bytes "
            "left)");
  EXPECT_EQ(ErrorOf("\x8d" + Le(UINT64_MAX, 8) + "."),
            "offset 0: BINUNICODE8: length 18446744073709551615 runs past the end of the input "
            "(1 bytes left)");
  EXPECT_NE(ErrorOf("\x8e" + Le(uint64_t{1} << 62, 8))
                .find("BINBYTES8: length 4611686018427387904 runs past"),
            std::string::npos);
  EXPECT_NE(ErrorOf("\x96" + Le(uint64_t{1} << 32, 8) + "ab.").find("BYTEARRAY8: length"),
            std::string::npos);
  EXPECT_NE(ErrorOf("B" + Le(0xffffffff, 4) + "ab.").find("BINBYTES: length"), std::string::npos);
  EXPECT_NE(ErrorOf("\x8b" + Le(0x7fffffff, 4) + ".").find("LONG4: length"), std::string::npos);
  EXPECT_EQ(ErrorOf("\x8c\x05"
                    "ab."),
            "offset 0: SHORT_BINUNICODE: length 5 runs past the end "
            "of the input (3 bytes left)");
  EXPECT_EQ(ErrorOf("T\xff\xff\xff\xff."), "offset 0: BINSTRING: negative length");
  EXPECT_EQ(ErrorOf("\x8b\xfe\xff\xff\xff."), "offset 0: LONG4: negative length");
}

TEST(PickleLimits, TruncatedOperandsAndFrames) {
  EXPECT_EQ(ErrorOf("J\x01\x02"),
            "offset 0: BININT: the input ends inside the operand (4 bytes needed, 2 left)");
  EXPECT_EQ(ErrorOf("NG\x3f"),
            "offset 1: BINFLOAT: the input ends inside the operand (8 bytes needed, 1 left)");
  EXPECT_EQ(ErrorOf("I12"), "offset 0: INT: the input ends inside the text operand (no newline)");
  EXPECT_EQ(ErrorOf("X\x01"),
            "offset 0: BINUNICODE: the input ends inside the operand (4 bytes needed, 1 left)");
  // FRAME: its length must fit in what follows it.
  EXPECT_EQ(Decoded("\x80\x04\x95" + Le(2, 8) + "N."), json(nullptr));
  EXPECT_EQ(ErrorOf("\x80\x04\x95" + Le(3, 8) + "N."),
            "offset 2: FRAME: a frame of 3 bytes runs past the end of the input (2 bytes left)");
  EXPECT_NE(
      ErrorOf("\x80\x04\x95" + Le(UINT64_MAX, 8) + "N.").find("a frame of 18446744073709551615"),
      std::string::npos);
  EXPECT_EQ(ErrorOf("\x80\x04\x95" + Le(0, 5)),
            "offset 2: FRAME: the input ends inside the operand (8 bytes needed, 5 left)");
}

// Every proper prefix of a pickle that uses most opcode families is an error, not a crash.
TEST(PickleLimits, EveryTruncationIsAnError) {
  const std::string pickle = "\x80\x04\x95" + Le(0, 8) + "}" + Put(0) + "(" + Str("k") + "](" +
                             Int1(1) + "M" + Le(300, 2) + "J" + Le(70000, 4) + "\x8a\x01" + "\xff" +
                             "G" + Le(0, 8) + "NI01\nL5L\nF0.5\ne" + Str("s") + "X" + Le(2, 4) +
                             "ab" + "V\\u00df\n" + "S'x'\n" + Str("t") + "C\x01z" + "\x94" +
                             Get(1) + "\x86" + "u.";
  Result<json> whole = Decode(pickle);
  ASSERT_TRUE(whole.ok()) << whole.error().message();
  json z = json::binary({'z'});
  EXPECT_EQ(*whole, json({{"k", {1, 300, 70000, -1, 0.0, nullptr, true, 5, 0.5}},
                          {"s", "ab"},
                          {"ß", "x"},
                          {"t", {z, z}}}));
  for (std::size_t n = 0; n < pickle.size(); ++n)
    EXPECT_FALSE(Decode(std::string_view(pickle).substr(0, n)).ok()) << n;
}

}  // namespace
}  // namespace rs::pickle
