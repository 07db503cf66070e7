// Seed corpus for pickle_fuzz: `pickle_seeds DIR` writes small pickles into DIR, so the fuzzer
// starts from inputs that reach deep into the decoder instead of from random bytes.
//   valid:   what Python writes at protocols 0 and 1, torch::jit::Pickler's protocol-2 layout,
//            bytes (3), frames and MEMOIZE (4), bytearray (5), memo aliasing, stack opcodes
//   hostile: GLOBAL os.system, STACK_GLOBAL + REDUCE, BUILD, INST, NEWOBJ, EXT1, PERSID,
//            NEXT_BUFFER, sets, memo expansion ("billion laughs"), nesting past the depth
//            limit, a self-containing list, huge lengths, a truncated frame, bad UTF-8, an int
//            over 64 bits
// Each seed is decoded once here: a valid one that fails or a hostile one that decodes is an
// error, so the corpus stays what it says.
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "rscore/pickle.h"

namespace {

using namespace std::string_literals;

std::string Le(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>(v >> (8 * i) & 0xff);
  return s;
}
std::string Str(const std::string& s) {  // SHORT_BINUNICODE
  return "\x8c"s + static_cast<char>(s.size()) + s;
}
std::string BinUnicode(const std::string& s) { return "X" + Le(s.size(), 4) + s; }
std::string Put(uint8_t i) { return "q"s + static_cast<char>(i); }
std::string Get(uint8_t i) { return "h"s + static_cast<char>(i); }
std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}
// A protocol-4/5 body inside one FRAME.
std::string Framed(uint8_t protocol, const std::string& body) {
  return "\x80"s + static_cast<char>(protocol) + "\x95" + Le(body.size(), 8) + body;
}

struct Seed {
  const char* name;
  std::string bytes;
  bool valid;
};

std::vector<Seed> Seeds() {
  std::string laughs = "(" + Repeat("K\x01", 10) + "l" + Put(0) + "0";
  for (uint8_t k = 1; k < 10; ++k) laughs += "(" + Repeat(Get(k - 1), 10) + "l" + Put(k) + "0";
  laughs += Get(9) + ".";
  const std::string torch =
      "\x80\x02}" + Put(0) + "(" + BinUnicode("version") + Put(1) + BinUnicode("2.4") + Put(2) +
      BinUnicode("entries") + Put(3) + "]" + Put(4) + "(}" + Put(5) + "(" +
      BinUnicode("record_id") + Put(6) + "K\x00"s + BinUnicode("time_created_ns") + Put(7) +
      "\x8a\x08" + Le(1700000000123456789, 8) + BinUnicode("duration_ms") + Put(8) + "G\x3f\xf8" +
      Le(0, 6) + BinUnicode("input_sizes") + Put(9) + "](](K\x04M" + Le(1024, 2) + "ee" +
      BinUnicode("process_group") + Put(10) + BinUnicode("0") + Put(11) + BinUnicode("default_pg") +
      Put(12) + "\x86" + BinUnicode("is_p2p") + "\x89" + BinUnicode("retired") + "\x88" +
      BinUnicode("pg_id") + "Nu}(" + Get(6) + "K\x01" + Get(10) + Get(11) + "r" + Le(300, 4) + "j" +
      Le(300, 4) + "\x86" + "ueu.";
  return {
      // Python's pickle.dumps({'a': [1, 2], 'b': 'ß'}, protocol=0) and 1.
      {"p0_dict.pkl", "(dp0\nVa\np1\n(lp2\nI1\naI2\nasVb\np3\nV\xdf\np4\ns.", true},
      {"p0_scalars.pkl",
       "(lp0\nI01\naI00\naNaF0.5\naFinf\naL18446744073709551615L\naI-7\naS'it\\'s\\x41\\101'\n"
       "aV\\u2192\\U0001f600\xe9\na.",
       true},
      {"p1_dict.pkl",
       "}q\x00(X\x01\x00\x00\x00"
       "aq\x01]q\x02(K\x01K\x02"
       "eX\x01\x00\x00\x00"
       "bq\x03X\x04\x00\x00\x00\xc3\x9f\\xq\x04u."s,
       true},
      {"p2_torch.pkl", torch, true},
      {"p3_bytes.pkl",
       "\x80\x03(B" + Le(3, 4) + "a\0\xff"s + "C\x01z" + "J" + Le(0xfffffff0, 4) + "M" + Le(70, 2) +
           "\x8b" + Le(2, 4) + Le(256, 2) + "T" + Le(2, 4) + "hiU\x02hot.",
       true},
      {"p4_frame.pkl",
       Framed(4, "}\x94(" + Str("k") + "\x94" + "]\x94(" + Str("\xc3\x9f") + "\x8d" + Le(2, 8) +
                     "hi\x8e" + Le(1, 8) + "z" + "K\x01K\x02K\x03\x87)e" + Str("again") + "h\x01" +
                     "u."),
       true},
      {"p5_bytearray.pkl", Framed(5, "\x96" + Le(2, 8) + "\x01\x02\x94h\x00\x86."s), true},
      {"memo_alias.pkl", "(]" + Put(0) + Get(0) + "l" + Get(0) + "K\x07" + "a0.", true},
      {"stack_ops.pkl",
       "K\x01(K\x02K\x03"
       "1(0"
       "2\x86"
       "N0.",
       true},
      {"global_os_system.pkl", "cos\nsystem\n(S'echo hi'\ntR.", false},
      {"stack_global_reduce.pkl",
       "\x80\x04" + Str("posix") + Str("system") + "\x93" + Str("id") + "\x85R.", false},
      {"build.pkl", "}}b.", false},
      {"inst.pkl", "(ios\nsystem\nS'id'\n.", false},
      {"newobj.pkl", "N)\x81.", false},
      {"ext1.pkl", "\x82\x01.", false},
      {"persid.pkl", "Pid\n.", false},
      {"next_buffer.pkl", "\x80\x05\x97.", false},
      {"set.pkl", Framed(4, "\x8f\x94(K\x01K\x02\x90."), false},
      {"billion_laughs.pkl", laughs, false},
      {"deep_nesting.pkl", Repeat("]", 300) + Repeat("a", 299) + ".", false},
      {"cycle.pkl", "\x80\x02]" + Put(0) + Get(0) + "a.", false},
      {"huge_length.pkl", "X\xff\xff\xff\xff", false},
      {"huge_length8.pkl", "\x8d\xff\xff\xff\xff\xff\xff\xff\xff.", false},
      {"truncated_frame.pkl", "\x80\x04\x95" + Le(100, 8) + "N.", false},
      {"bad_utf8.pkl", Str("\xed\xa0\x80") + ".", false},
      {"int_over_64_bits.pkl", "\x8a\x09" + Le(0, 8) + "\x01.", false},
  };
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  mkdir(dir.c_str(), 0755);
  int status = 0;
  for (const Seed& seed : Seeds()) {
    auto decoded = rs::pickle::Decode(seed.bytes);
    if (decoded.ok() != seed.valid) {
      std::fprintf(stderr, "pickle_seeds: %s %s: %s\n", seed.name,
                   seed.valid ? "does not decode" : "decodes",
                   decoded.ok() ? decoded->dump().c_str() : decoded.error().message().c_str());
      status = 1;
    }
    std::ofstream out(dir + "/" + seed.name, std::ios::binary);
    out.write(seed.bytes.data(), static_cast<std::streamsize>(seed.bytes.size()));
    if (!out) {
      std::fprintf(stderr, "pickle_seeds: cannot write %s/%s\n", dir.c_str(), seed.name);
      status = 1;
    }
  }
  return status;
}
