// How a dump was recorded (fr_recording.h) and its pg_config mapped to groups (fr_groups.h),
// on dumps shaped as ProcessGroupGloo and ProcessGroupNCCL write them.
#include "merger/fr_groups.h"

#include <gtest/gtest.h>

#include <string>

#include "merger/fr_recording.h"

namespace rs::merge::fr {
namespace {

// One entry as JSON text.
std::string E(int record_id, int pg_id, const std::string& pg, const std::string& desc, int seq,
              const std::string& name, const std::string& state, const std::string& extra = "") {
  return R"({"record_id": )" + std::to_string(record_id) + R"(, "pg_id": )" +
         std::to_string(pg_id) + R"(, "process_group": [")" + pg + R"(", ")" + desc +
         R"("], "collective_seq_id": )" + std::to_string(seq) + R"(, "p2p_seq_id": 0, "op_id": )" +
         std::to_string(seq) + R"(, "profiling_name": ")" + name + R"(", "time_created_ns": )" +
         std::to_string(1000 + record_id) + R"(, "state": ")" + state + R"(")" + extra + "}";
}

std::string DumpText(const std::string& pg_config, const std::vector<std::string>& entries,
                     const std::string& version = "2.10") {
  std::string list;
  for (const std::string& e : entries) list += (list.empty() ? "" : ", ") + e;
  return R"({"version": ")" + version + R"(", "pg_config": )" + pg_config + R"(, "entries": [)" +
         list + "]}";
}

// gloo's pg_config: one entry under '' (recorded by the constructor, before the group was
// named), its entries in group '0' with pg_id 0.
constexpr const char* kGlooConfig = R"({"": {"name": "", "desc": "", "ranks": "[0, 1, 2, 3]"}})";

const ProcessGroup* Find(const Dump& d, const std::string& name) {
  for (const ProcessGroup& g : d.groups) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

// A healthy gloo job's dump used to make a phantom group '' of ranks 0-3 and leave the real
// group '0' without members.
TEST(FrGroups, GlooUnnamedConfigIsTheDefaultGroupOfPgId0) {
  const std::string retired = R"(, "retired": true)";
  auto d =
      ParseDump(DumpText(kGlooConfig,
                         {E(0, 0, "0", "default_pg", 1, "gloo:all_reduce", "scheduled", retired),
                          E(1, 0, "0", "default_pg", 2, "gloo:all_reduce", "scheduled", retired)}),
                "json", "nccl_trace_rank_2.json", 2);
  ASSERT_TRUE(d.ok()) << d.error().message();
  ASSERT_EQ(d->groups.size(), 1u);
  EXPECT_EQ(d->groups[0].name, "0");
  EXPECT_EQ(d->groups[0].desc, "default_pg");
  EXPECT_EQ(d->groups[0].ranks, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(d->groups[0].members, "default_group");
  EXPECT_TRUE(d->notes.empty());
  EXPECT_EQ(d->backend, "gloo");
  EXPECT_EQ(d->timing, "none");
  EXPECT_EQ(d->ring, "complete");
}

// Every gloo group after the first is recorded with no ranks, under the same empty key (the
// last one built wins): nothing can be tied, and it is said.
TEST(FrGroups, GlooUnnamedConfigWithoutRanksLeavesMembersUnknownAndSaysSo) {
  auto d = ParseDump(DumpText(R"({"": {"name": "", "desc": "", "ranks": "[]"}})",
                              {E(0, 0, "0", "default_pg", 1, "gloo:all_reduce", "scheduled"),
                               E(1, 1, "1", "undefined", 1, "gloo:all_reduce", "scheduled")}),
                     "json", "nccl_trace_rank_0.json", 0);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_TRUE(d->groups.empty());
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_NE(d->notes[0].find("empty name with no ranks"), std::string::npos) << d->notes[0];
}

// Ranks 0..n-1 of a first group that is not the default group are positions in it, not global
// ranks; and a dump whose ring lost pg_id 0's entries cannot tie the entry either.
TEST(FrGroups, GlooUnnamedConfigThatCannotBeTiedIsLeftOutWithANote) {
  auto sub = ParseDump(
      DumpText(R"({"": {"name": "", "desc": "", "ranks": "[0, 1]"}})",
               {E(0, 0, "3", "DATA_PARALLEL_GROUP_GLOO", 1, "gloo:all_reduce", "scheduled")}),
      "json", "nccl_trace_rank_1.json", 1);
  ASSERT_TRUE(sub.ok()) << sub.error().message();
  EXPECT_TRUE(sub->groups.empty());
  ASSERT_EQ(sub->notes.size(), 1u);
  EXPECT_NE(sub->notes[0].find("not the default group"), std::string::npos) << sub->notes[0];

  auto wrapped = ParseDump(
      DumpText(kGlooConfig, {E(500, 1, "1", "undefined", 9, "gloo:all_reduce", "scheduled")}),
      "json", "nccl_trace_rank_1.json", 1);
  ASSERT_TRUE(wrapped.ok());
  EXPECT_TRUE(wrapped->groups.empty());
  ASSERT_EQ(wrapped->notes.size(), 1u);
  EXPECT_NE(wrapped->notes[0].find("no entry of the process's first group"), std::string::npos);
  EXPECT_EQ(wrapped->ring, "wrapped");

  // As PyTorch 2.14 wrote it on every rank of a job with tp and dp subgroups built after the
  // default group: '[0, 1]', the last subgroup's positions, not the default group's members.
  auto later = ParseDump(DumpText(R"({"": {"name": "", "desc": "", "ranks": "[0, 1]"}})",
                                  {E(0, 0, "0", "default_pg", 1, "gloo:allreduce", "scheduled"),
                                   E(1, 1, "1", "tp", 1, "gloo:allreduce", "scheduled"),
                                   E(2, 2, "3", "dp", 1, "gloo:allreduce", "scheduled")}),
                         "json", "nccl_trace_rank_0.json", 0);
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->groups.empty());
  ASSERT_EQ(later->notes.size(), 1u);
  EXPECT_NE(later->notes[0].find("built after the first"), std::string::npos) << later->notes[0];

  // Rank 7 is not among ranks 0-3: the list is not its default group's.
  auto outside = ParseDump(
      DumpText(kGlooConfig, {E(0, 0, "0", "default_pg", 1, "gloo:all_reduce", "scheduled")}),
      "json", "nccl_trace_rank_7.json", 7);
  ASSERT_TRUE(outside.ok());
  EXPECT_TRUE(outside->groups.empty());
  ASSERT_EQ(outside->notes.size(), 1u);
}

// NCCL names its pg_config entries: kept as they are, with members 'listed'.
TEST(FrGroups, NamedConfigIsKept) {
  auto d = ParseDump(DumpText(R"({"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"},
                              "5": {"name": "5", "desc": "TP", "ranks": "[0, 4]"}})",
                              {E(0, 0, "0", "default_pg", 1, "nccl:all_reduce", "completed")}),
                     "json", "nccl_trace_rank_0.json", 0);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->groups.size(), 2u);
  EXPECT_EQ(Find(*d, "5")->ranks, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(Find(*d, "5")->members, "listed");
}

TEST(FrRecording, TimingFromWhatTheEntriesCarry) {
  const std::string cfg = "{}";
  const std::string done_untimed = R"(, "time_discovered_completed_ns": 2000, "retired": true)";
  const std::string done_timed =
      R"(, "time_discovered_started_ns": 1500, "time_discovered_completed_ns": 2000,
         "duration_ms": 0.5)";
  auto parse = [&](std::vector<std::string> entries) {
    auto d = ParseDump(DumpText(cfg, entries), "json", "nccl_trace_rank_0.json", 0);
    EXPECT_TRUE(d.ok());
    return d.ok() ? d->timing : std::string("error");
  };
  // Without TORCH_NCCL_ENABLE_TIMING there is no start event: scheduled -> completed.
  EXPECT_EQ(parse({E(0, 0, "0", "", 1, "nccl:all_reduce", "completed", done_untimed),
                   E(1, 0, "0", "", 2, "nccl:all_reduce", "scheduled")}),
            "off");
  EXPECT_EQ(parse({E(0, 0, "0", "", 1, "nccl:all_reduce", "completed", done_timed),
                   E(1, 0, "0", "", 2, "nccl:all_reduce", "started",
                     R"(, "time_discovered_started_ns": 3000)")}),
            "on");
  EXPECT_EQ(parse({E(0, 0, "0", "", 1, "nccl:all_reduce", "completed", done_untimed),
                   E(1, 0, "0", "", 2, "nccl:all_reduce", "completed", done_timed)}),
            "partial");
  EXPECT_EQ(parse({E(0, 0, "0", "", 1, "nccl:all_reduce", "scheduled")}), "unknown");
  EXPECT_EQ(parse({E(0, 0, "0", "", 1, "gloo:all_reduce", "scheduled")}), "none");
  EXPECT_EQ(parse({E(0, 0, "0", "", 1, "xccl:all_reduce", "completed", done_untimed)}), "unknown");
  EXPECT_EQ(parse({}), "unknown");  // no entry: no backend either
}

TEST(FrRecording, BackendAndRing) {
  auto mixed = ParseDump(DumpText("{}", {E(3, 0, "0", "", 1, "nccl:all_reduce", "scheduled"),
                                         E(4, 0, "0", "", 2, "gloo:all_reduce", "scheduled")}),
                         "json", "nccl_trace_rank_0.json", 0);
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->backend, "mixed");
  ASSERT_EQ(mixed->notes.size(), 1u);
  EXPECT_EQ(mixed->first_record_id, 3);
  EXPECT_EQ(mixed->last_record_id, 4);
  EXPECT_EQ(mixed->ring, "wrapped");  // the ring kept ids 3 and 4 only

  auto filtered = ParseDump(DumpText("{}", {E(0, 0, "0", "", 1, "nccl:all_reduce", "scheduled"),
                                            E(5, 0, "0", "", 2, "nccl:all_reduce", "scheduled")}),
                            "json", "nccl_trace_rank_0.json", 0);
  ASSERT_TRUE(filtered.ok());
  EXPECT_EQ(filtered->ring, "filtered");
  EXPECT_EQ(filtered->backend, "nccl");

  EXPECT_EQ(BackendOf("nccl:send 0->1"), "nccl");
  EXPECT_EQ(BackendOf("GLOO:all_reduce"), "gloo");
  EXPECT_EQ(BackendOf("all_reduce"), "");
  EXPECT_EQ(BackendOf("a b:c"), "");
}

// A later 2.x only adds fields: read, with a note; another major is refused.
TEST(FrRecording, NewerMinorVersionIsReadWithANote) {
  auto d = ParseDump(DumpText("{}", {}, "2.13"), "json", "nccl_trace_rank_0.json", 0);
  ASSERT_TRUE(d.ok()) << d.error().message();
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_NE(d->notes[0].find("2.13 is newer than the newest"), std::string::npos);
  EXPECT_TRUE(ParseDump(DumpText("{}", {}, "2.0"), "json", "x_0", 0)->notes.empty());
  EXPECT_FALSE(ParseDump(DumpText("{}", {}, "3.0"), "json", "x_0", 0).ok());
}

}  // namespace
}  // namespace rs::merge::fr
