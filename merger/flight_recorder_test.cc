#include "merger/flight_recorder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "merger/fr_bounds.h"

namespace rs::merge::fr {
namespace {

// A directory of its own for the test's files, removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "fr_test.XXXXXX").string();
    path_ = mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, std::string_view bytes) const {
    const std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return file;
  }

 private:
  std::string path_;
};

// A JSON dump as _dump_nccl_trace_json writes it (schema 2.10): 0 for undiscovered times,
// pg_status numbers as strings, the group as a list.
constexpr const char* kJsonDump = R"({
  "version": "2.10", "comm_lib_version": "2.27.3",
  "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}},
  "pg_status": {"0": {"last_enqueued_collective": "5", "last_started_collective": "5",
                      "last_completed_collective": "4"}},
  "entries": [
    {"record_id": 0, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": 5,
     "p2p_seq_id": 0, "op_id": 5, "profiling_name": "nccl:all_reduce", "time_created_ns": 1000,
     "input_sizes": [[4, 8], [16]], "input_dtypes": ["BFloat16", "BFloat16"],
     "output_sizes": [[4, 8], [16]], "output_dtypes": ["BFloat16", "BFloat16"],
     "state": "started", "time_discovered_started_ns": 1500, "time_discovered_completed_ns": 0,
     "retired": false, "timeout_ms": 600000, "is_p2p": false, "thread_id": "139",
     "thread_name": "pt_main_thread"},
    {"record_id": 1, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": 5,
     "p2p_seq_id": 3, "op_id": 6, "profiling_name": "nccl:recv 2<-1", "time_created_ns": 2000,
     "input_sizes": [[256]], "input_dtypes": ["Float"], "output_sizes": [[256]],
     "output_dtypes": ["Float"], "state": "scheduled", "time_discovered_started_ns": 0,
     "time_discovered_completed_ns": 0, "retired": false, "timeout_ms": 600000, "is_p2p": true,
     "duration_ms": 0.5}
  ]
})";

TEST(FlightRecorder, ReadsAJsonDump) {
  auto d = ParseDump(kJsonDump, "json", "nccl_trace_rank_2.json", 2);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->version, "2.10");
  EXPECT_EQ(d->comm_lib_version, "2.27.3");
  ASSERT_EQ(d->groups.size(), 1u);
  EXPECT_EQ(d->groups[0].ranks, (std::vector<int64_t>{0, 1, 2, 3}));
  ASSERT_EQ(d->status.size(), 1u);
  EXPECT_EQ(d->status[0].last_completed, 4);
  ASSERT_EQ(d->entries.size(), 2u);
  const Entry& a = d->entries[0];
  EXPECT_EQ(a.op, "ALL_REDUCE");
  EXPECT_EQ(a.state, "started");
  EXPECT_EQ(a.time_discovered_started_ns, 1500);
  EXPECT_FALSE(a.time_discovered_completed_ns.has_value());  // JSON's 0: not discovered
  EXPECT_EQ(a.input_numel, 4 * 8 + 16);
  EXPECT_EQ(a.datatype, "bfloat16");
  EXPECT_EQ(a.pg_name, "0");
  EXPECT_EQ(a.pg_desc, "default_pg");
  EXPECT_EQ(a.thread_name, "pt_main_thread");
  EXPECT_FALSE(a.duration_ms.has_value());
  const Entry& b = d->entries[1];
  EXPECT_EQ(b.op, "RECV");
  EXPECT_TRUE(b.is_p2p);
  EXPECT_EQ(b.state, "enqueued");  // FR's 'scheduled'
  EXPECT_EQ(b.src, 1);
  EXPECT_EQ(b.dst, 2);
  EXPECT_EQ(b.duration_ms, 0.5);
}

TEST(FlightRecorder, ErrorsNameTheField) {
  auto bad = ParseDump(R"({"version": "2.10", "entries": [{"profiling_name": "nccl:all_reduce",
      "collective_seq_id": 1, "time_created_ns": 5, "process_group": ["0", ""]}]})",
                       "json", "x", 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "entries[0].state: missing");
  auto state = ParseDump(R"({"version": "2.10", "entries": [{"profiling_name": "nccl:x",
      "collective_seq_id": 1, "time_created_ns": 5, "process_group": ["0", ""],
      "state": "done"}]})",
                         "json", "x", 0);
  ASSERT_FALSE(state.ok());
  EXPECT_NE(state.error().message().find("entries[0].state: 'done' is none of"), std::string::npos);
  auto type = ParseDump(R"({"version": "2.10", "entries": [{"profiling_name": "nccl:x",
      "collective_seq_id": "seven", "time_created_ns": 5, "process_group": ["0", ""],
      "state": "started"}]})",
                        "json", "x", 0);
  ASSERT_FALSE(type.ok());
  EXPECT_EQ(type.error().message(), "entries[0].collective_seq_id: not an integer (string)");
  auto version = ParseDump(R"({"version": "3.0", "entries": []})", "json", "x", 0);
  ASSERT_FALSE(version.ok());
  EXPECT_NE(version.error().message().find("version '3.0'"), std::string::npos);
  EXPECT_FALSE(ParseDump("{\"version\": ", "json", "x", 0).ok());
  EXPECT_FALSE(ParseDump("[1, 2]", "json", "x", 0).ok());
}

// Python's pickle at protocols 0 and 1 (pickle.dump(d, f, protocol=0/1)) and JSON written with
// a byte order mark (encoding='utf-8-sig') are dumps too: they used to be refused as "not a
// rankscope bundle".
TEST(FlightRecorder, PickleProtocols0And1AndJsonWithAByteOrderMarkAreRead) {
  ScratchDir dir;
  using namespace std::string_view_literals;
  const std::pair<std::string, std::string_view> dumps[] = {
      // pickle.dumps({'version': '2.10', 'entries': []}, protocol=0), and optimized
      {"nccl_trace_rank_0", "(dp0\nVversion\np1\nV2.10\np2\nsVentries\np3\n(lp4\ns."sv},
      {"nccl_trace_rank_1", "(dVversion\nV2.10\nsVentries\n(ls."sv},
      // protocol=1
      {"nccl_trace_rank_2",
       "}q\x00(X\x07\x00\x00\x00"
       "versionq\x01X\x04\x00\x00\x00"
       "2.10q\x02X\x07\x00\x00\x00"
       "entriesq\x03]q\x04u."sv},
      {"nccl_trace_rank_3.json", "\xef\xbb\xbf{\"version\": \"2.10\", \"entries\": []}"sv},
      {"nccl_trace_rank_4.json", "\xef\xbb\xbf\r\n  {\"version\": \"2.10\", \"entries\": []}"sv},
  };
  for (const auto& [name, bytes] : dumps) {
    const std::string file = dir.Write(name, bytes);
    EXPECT_NE(SniffFile(file), Sniff::kNotDump) << name;
    auto d = ReadDump(file);
    ASSERT_TRUE(d.ok()) << name << ": " << d.error().message();
    EXPECT_EQ(d->version, "2.10") << name;
    EXPECT_EQ(d->format, name.find(".json") != std::string::npos ? "json" : "pickle");
  }
  // Still not dumps: text, a bundle's zstd frame, a UTF-8 BOM before anything but JSON.
  for (std::string_view other :
       {"(not a pickle"sv, "\x28\xb5\x2f\xfd"sv, "\xef\xbb\xbfhello"sv, "x"sv, ""sv}) {
    EXPECT_EQ(SniffFile(dir.Write("nccl_trace_rank_9", other)), Sniff::kNotDump) << other;
  }
}

// One 300 MB string in a dump merged with exit 0, and report then refused the whole merged
// database (a value over rs::kMaxValueBytes). Text values are cut at merge, each cut listed.
TEST(FlightRecorder, OversizedTextValuesAreCutAndListed) {
  const std::string big(5 << 20, 'x');  // over rs::kMaxValueBytes itself
  std::string wide;
  while (wide.size() < 300'000) wide += "\xc3\xa9";  // 'é': cut between characters only
  std::string frames;
  for (int i = 0; i < 3000; ++i) {
    frames += std::string(i ? "," : "") + R"({"name": "f)" + std::to_string(i) +
              R"(", "filename": ")" + std::string(200, 'p') + R"(", "line": 1})";
  }
  const std::string dump = R"({"version": "2.10",
    "pg_config": {"0": {"name": "0", "desc": ")" +
                           wide + R"(", "ranks": "[0, 1]"}},
    "entries": [{"profiling_name": "nccl:all_reduce)" +
                           big + R"(", "collective_seq_id": 1,
      "time_created_ns": 5, "process_group": ["0", "default_pg"], "state": "started",
      "frames": [)" + frames +
                           R"(]}]})";
  auto d = ParseDump(dump, "json", "nccl_trace_rank_1.json", 1);
  ASSERT_TRUE(d.ok()) << d.error().message();
  const Entry& e = d->entries[0];
  EXPECT_LE(static_cast<int64_t>(e.profiling_name.size()), kMaxFrValueBytes);
  EXPECT_EQ(e.profiling_name.rfind("nccl:all_reducexxx", 0), 0u);
  EXPECT_NE(e.profiling_name.find("[truncated by rankscope-merge: 5242895 bytes]"),
            std::string::npos);
  EXPECT_EQ(e.op, "ALL_REDUCE");
  const std::string& desc = d->groups[0].desc;
  EXPECT_LE(static_cast<int64_t>(desc.size()), kMaxFrValueBytes);
  EXPECT_EQ(desc.substr(0, 4), "\xc3\xa9\xc3\xa9");
  const size_t marker = desc.find(" [truncated");
  ASSERT_NE(marker, std::string::npos);
  EXPECT_EQ(marker % 2, 0u);  // whole characters before it
  EXPECT_LE(static_cast<int64_t>(StackText(e.frames).size()), kMaxFrValueBytes);
  EXPECT_EQ(e.frames.front().name, "f0");  // the innermost frames kept
  EXPECT_NE(e.frames.back().name.find("frame(s) left out"), std::string::npos);
  EXPECT_EQ(d->truncated, (std::vector<std::string>{"pg_config[0].desc (300000 bytes)",
                                                    "entries[0].profiling_name (5242895 bytes)",
                                                    "entries[0].frames (631889 bytes)"}));
}

// A list no dump has (a shape list of megabytes) cannot be cut and still be JSON: the dump is
// refused, naming the field, and the merge goes on without it.
TEST(FlightRecorder, AnOversizedListRefusesTheDump) {
  std::string shapes;
  for (int i = 0; i < 200'000; ++i) shapes += std::string(i ? "," : "") + "[1, 2]";
  auto d = ParseDump(R"({"version": "2.10", "entries": [{"profiling_name": "nccl:all_reduce",
      "collective_seq_id": 1, "time_created_ns": 5, "process_group": ["0", ""],
      "state": "started", "input_sizes": [)" +
                         shapes + "]}]}",
                     "json", "x", 0);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find("entries[0].input_sizes: 1"), std::string::npos)
      << d.error().message();
  EXPECT_NE(d.error().message().find("over the 256 KiB"), std::string::npos);
}

TEST(FlightRecorder, RankFromFileName) {
  EXPECT_EQ(RankFromFileName("/a/b/nccl_trace_rank_12"), 12);
  EXPECT_EQ(RankFromFileName("nccl_trace_rank_3.json"), 3);
  EXPECT_EQ(RankFromFileName("dump7.pkl"), 7);
  EXPECT_FALSE(RankFromFileName("nccl_trace_rank_").has_value());
  EXPECT_FALSE(RankFromFileName("nccl_trace_rank_3.tmp").has_value());
  EXPECT_FALSE(RankFromFileName("rank_12345678901").has_value());  // not a rank
}

TEST(FlightRecorder, Names) {
  EXPECT_EQ(OpFromProfilingName("nccl:all_reduce"), "ALL_REDUCE");
  EXPECT_EQ(OpFromProfilingName("nccl:_allgather_base"), "ALL_GATHER");
  EXPECT_EQ(OpFromProfilingName("nccl:reduce_scatter_tensor_coalesced"), "REDUCE_SCATTER");
  EXPECT_EQ(OpFromProfilingName("nccl:_reduce_oop"), "REDUCE");
  EXPECT_EQ(OpFromProfilingName("nccl:send 0->1"), "SEND");
  EXPECT_EQ(OpFromProfilingName("nccl:ALLGATHER_coalesced"), "ALL_GATHER");
  EXPECT_EQ(OpFromProfilingName("nccl:coalesced"), "COALESCED");
  EXPECT_EQ(OpFromProfilingName("xccl:all_to_all_single"), "ALL_TO_ALL");
  EXPECT_EQ(DatatypeFromTorch("Float"), "float32");
  EXPECT_EQ(DatatypeFromTorch("Long"), "int64");
  EXPECT_EQ(DatatypeFromTorch("ComplexFloat"), "complexfloat");
}

}  // namespace
}  // namespace rs::merge::fr
