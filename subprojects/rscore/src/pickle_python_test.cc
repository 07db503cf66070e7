// Cross-check against Python's own pickle module: one Flight-Recorder-shaped object, pickled at
// protocols 0 to 5, must decode to what json.dump writes for it; and what Python writes for
// objects that are not plain data must be refused.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "rscore/pickle.h"
#include "rscore/scratch_file.h"

namespace rs::pickle {
namespace {

using nlohmann::json;

// Writes DIR/pN.pickle and DIR/pN.json for N in 0-5 (bytes as {"$bytes": hex} in the JSON,
// tuples as arrays, int keys as text: as the decoder maps them), and a few pickles that must be
// refused.
constexpr char kScript[] = R"PY(
import collections, json, pickle, sys

out = sys.argv[1]

def entry(i, frames):
    return {
        "record_id": i,
        "pg_id": i % 2,
        "process_group": ("0", "default_pg"),
        "collective_seq_id": 1000 + i,
        "profiling_name": "nccl:all_reduce",
        "time_created_ns": 1718000000000000000 + i * 1000003,
        "input_sizes": [[1024, 1024], [3]],
        "input_dtypes": ["Float", "BFloat16"],
        "state": "completed" if i else "scheduled",
        "time_discovered_started_ns": None,
        "duration_ms": 1.25 * i + 0.1,
        "is_p2p": False,
        "retired": i % 2 == 0,
        "timeout_ms": 600000,
        "frames": frames,  # the same list in every entry: memo references
    }

def dump(protocol):
    frames = [{"name": "all_reduce", "filename": "ß→✓/train.py", "line": 42}]
    obj = {
        "version": "2.4",
        "pg_config": {"0": {"name": "default_pg", "desc": "default_pg", "ranks": "[0, 1]"}},
        "entries": [entry(i, frames) for i in range(4)],
        "ints": [0, 1, -1, 255, 256, 65535, 65536, 2**31 - 1, -2**31, 2**31, -2**31 - 1,
                 2**32, 2**62, 2**63 - 1, -2**63, -2**63 + 1, 2**63, 2**64 - 1],
        "floats": [0.0, -0.0, 0.1, 1.5, -2.75, 1e300, -1e-300, 5e-324,
                   1.7976931348623157e308, 3.141592653589793],
        "text": ["ß→✓", "", "\x00\t\n\r\\ \"'", "日本語", "\U0001F600", "\x7f\x80\xff",
                 "\\u0041", "x" * 70000],
        "flags": [True, False, None],
        "int_keys": {1: "one", -5: "minus five", 2**63: "big"},
        "empty": [[], {}, ()],
        "nested": [[[[[1]]]], ((2,),)],
        "many": list(range(2500)),                     # several APPENDS batches
        "wide": {"k%d" % i: i for i in range(1200)},   # several SETITEMS batches
    }
    # Python pickles bytes below protocol 3, and bytearray below 5, as calls: not data.
    if protocol >= 3:
        obj["bytes"] = [b"", b"\x00\xff\x80abc", b"y" * 300]
    if protocol >= 5:
        obj["bytearray"] = bytearray(b"\x01\x02")
    return obj

def hex_bytes(o):
    if isinstance(o, (bytes, bytearray)):
        return {"$bytes": bytes(o).hex()}
    raise TypeError(type(o))

for p in range(6):
    obj = dump(p)
    with open(f"{out}/p{p}.pickle", "wb") as f:
        f.write(pickle.dumps(obj, protocol=p))
    with open(f"{out}/p{p}.json", "w", encoding="utf-8") as f:
        json.dump(obj, f, default=hex_bytes, ensure_ascii=False)

cycle = []
cycle.append(cycle)
refused = {
    "bytes_p0": ({"b": b"ab"}, 0),
    "bytes_p2": (b"ab", 2),
    "ordered_p2": (collections.OrderedDict(a=1), 2),
    "ordered_p4": (collections.OrderedDict(a=1), 4),
    "bytearray_p4": (bytearray(b"ab"), 4),
    "set_p4": ({1, 2}, 4),
    "cycle_p2": (cycle, 2),
}
for name, (obj, p) in refused.items():
    with open(f"{out}/{name}.pickle", "wb") as f:
        f.write(pickle.dumps(obj, protocol=p))
)PY";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Bytes values as the script's JSON writes them: {"$bytes": "00ff"}.
json BytesAsHex(const json& j) {
  if (j.is_binary()) {
    std::string hex;
    for (std::uint8_t b : j.get_binary()) {
      hex += "0123456789abcdef"[b >> 4];
      hex += "0123456789abcdef"[b & 15];
    }
    return {{"$bytes", hex}};
  }
  if (j.is_structured()) {
    json out = j;
    for (auto it = out.begin(); it != out.end(); ++it) *it = BytesAsHex(*it);
    return out;
  }
  return j;
}

class PicklePython : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("python3 -c pass >/dev/null 2>&1") != 0) {
      if (std::getenv("CI") != nullptr)
        FAIL() << "python3 is missing (CI installs it: .ci/install-deps)";
      GTEST_SKIP() << "python3 is missing: install it to cross-check with Python's pickle";
    }
    std::string tmpl = TempDir() + "/rscore_pickle.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/write.py") << kScript;
    ASSERT_EQ(std::system(("python3 " + dir_ + "/write.py " + dir_).c_str()), 0);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string dir_;
};

TEST_F(PicklePython, EveryProtocolDecodesAsJsonDumpWritesIt) {
  for (int p = 0; p <= 5; ++p) {
    SCOPED_TRACE("protocol " + std::to_string(p));
    const std::string pickle = ReadFile(dir_ + "/p" + std::to_string(p) + ".pickle");
    const json want = json::parse(ReadFile(dir_ + "/p" + std::to_string(p) + ".json"));
    ASSERT_GT(pickle.size(), 70000u);
    Result<json> got = Decode(pickle);
    ASSERT_TRUE(got.ok()) << got.error().message();
    // The difference as a JSON patch: the whole value is too long to print.
    const json patch = json::diff(BytesAsHex(*got), want);
    EXPECT_TRUE(patch.empty()) << patch.dump().substr(0, 2000);
    // What the comparison cannot see: int types, and bytes as binary.
    EXPECT_TRUE(got->at("ints").back().is_number_unsigned());
    EXPECT_TRUE(got->at("ints").at(14).is_number_integer());
    EXPECT_EQ(got->at("ints").at(14).get<int64_t>(), INT64_MIN);
    EXPECT_EQ(got->at("text").at(0), "ß→✓");
    EXPECT_EQ(got->contains("bytes"), p >= 3);
    if (p >= 3) {
      EXPECT_TRUE(got->at("bytes").at(1).is_binary());
    }
    if (p >= 5) {
      EXPECT_EQ(got->at("bytearray"), json::binary({1, 2}));
    }
  }
}

TEST_F(PicklePython, WhatIsNotPlainDataIsRefused) {
  const struct {
    const char* file;
    const char* want;
  } cases[] = {
      {"bytes_p0", "opcode GLOBAL (0x63) would import _codecs.encode: refused"},
      {"bytes_p2", "offset 2: opcode GLOBAL (0x63) would import _codecs.encode: refused"},
      {"ordered_p2", "offset 2: opcode GLOBAL (0x63) would import collections.OrderedDict"},
      {"ordered_p4", "opcode STACK_GLOBAL (0x93) would import a module attribute"},
      {"bytearray_p4", "opcode STACK_GLOBAL (0x93)"},
      {"set_p4", "opcode EMPTY_SET (0x8f) would build a set: refused"},
      {"cycle_p2", "the pickle's data is not a tree: a list contains itself"},
  };
  for (const auto& c : cases) {
    Result<json> got = Decode(ReadFile(dir_ + "/" + c.file + ".pickle"));
    ASSERT_FALSE(got.ok()) << c.file << ": " << got->dump();
    EXPECT_NE(got.error().message().find(c.want), std::string::npos)
        << c.file << ": " << got.error().message();
  }
}

}  // namespace
}  // namespace rs::pickle
