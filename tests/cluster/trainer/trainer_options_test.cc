#include "trainer_options.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace trainer {
namespace {

std::map<std::string, std::string> g_env;
const char* FakeGetenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

TEST(TrainerOptions, FlagsAndDefaults) {
  bool help = false;
  auto o = ParseOptions(
      {"--steps", "7", "--grad-mb=0.5", "--direct", "--data-dir", "/d", "--warmup-ms", "800"},
      nullptr, &help);
  ASSERT_TRUE(o.ok()) << o.error().message();
  EXPECT_EQ(o->steps, 7);
  EXPECT_DOUBLE_EQ(o->grad_mb, 0.5);
  EXPECT_TRUE(o->direct_io);
  EXPECT_EQ(o->data_dir, "/d");
  EXPECT_EQ(o->hang_at_step, -1);
  EXPECT_DOUBLE_EQ(o->slow_factor, 1.0);
  EXPECT_TRUE(o->async);
  EXPECT_EQ(o->buckets, 1);
  EXPECT_EQ(o->warmup_ms, 800);
  EXPECT_EQ(o->startup_ms, 0);
}

TEST(TrainerOptions, CollectivesModeAndBuckets) {
  bool help = false;
  auto o = ParseOptions({"--collectives", "sync", "--buckets", "4"}, nullptr, &help);
  ASSERT_TRUE(o.ok()) << o.error().message();
  EXPECT_FALSE(o->async);
  EXPECT_EQ(o->buckets, 4);
  auto bad = ParseOptions({"--collectives", "blocking"}, nullptr, &help);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("--collectives 'blocking'"), std::string::npos);
  EXPECT_FALSE(ParseOptions({"--buckets", "0"}, nullptr, &help).ok());
}

TEST(TrainerOptions, FaultsFromEnvironmentAreOverriddenByFlags) {
  bool help = false;
  auto o = ParseOptions({"--slow-factor", "2"}, "slow-factor=3,hang-at-step=5", &help);
  ASSERT_TRUE(o.ok()) << o.error().message();
  EXPECT_DOUBLE_EQ(o->slow_factor, 2.0);
  EXPECT_EQ(o->hang_at_step, 5);
}

TEST(TrainerOptions, ErrorsNameTheFlag) {
  bool help = false;
  auto bad = ParseOptions({"--steps", "x"}, nullptr, &help);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("--steps"), std::string::npos);
  auto unknown = ParseOptions({"--bogus", "1"}, nullptr, &help);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("--bogus"), std::string::npos);
  auto range = ParseOptions({"--gpu-share", "1.5"}, nullptr, &help);
  EXPECT_FALSE(range.ok());
  auto env = ParseOptions({}, "steps=3", &help);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.error().message().find("RANKSCOPE_TRAINER_FAULTS"), std::string::npos);
  EXPECT_FALSE(ParseOptions({"--data-kb-per-step", "6"}, nullptr, &help).ok());
}

TEST(TrainerOptions, MultiGroupJobAndItsFaults) {
  bool help = false;
  auto o = ParseOptions({"--parallel", "tp=2,pp=2,dp=2,ep=2", "--microbatches", "6", "--fr-timing",
                         "--no-batch-p2p-sync"},
                        "hang-at-step=4,fault-in=ep", &help);
  ASSERT_TRUE(o.ok()) << o.error().message();
  ASSERT_TRUE(o->parallel.has_value());
  EXPECT_EQ(*o->parallel, (ParallelSpec{2, 2, 2, 2}));
  EXPECT_EQ(o->microbatches, 6);
  EXPECT_TRUE(o->fr_timing);
  EXPECT_FALSE(o->batch_p2p_sync);
  EXPECT_EQ(o->fault_in, FaultPoint::kEp);
  EXPECT_EQ(o->hang_at_step, 4);
  EXPECT_FALSE(ParseOptions({}, nullptr, &help)->parallel.has_value());  // DDP by default

  auto m = ParseOptions({"--parallel", "tp=2,dp=2", "--mismatch", "dtype", "--mismatch-at-step",
                         "3", "--fault-in", "tp"},
                        nullptr, &help);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->mismatch, Mismatch::kDtype);
  EXPECT_EQ(m->mismatch_at_step, 3);

  struct Bad {
    std::vector<std::string> args;
    const char* says;
  };
  for (const Bad& b : std::vector<Bad>{
           {{"--fault-in", "tp"}, "need a multi-group job"},
           {{"--parallel", "tp=2", "--fault-in", "xp"}, "--fault-in 'xp'"},
           {{"--parallel", "tp=2", "--mismatch", "op", "--fault-in", "tp"}, "go together"},
           {{"--parallel", "tp=2", "--mismatch", "op", "--mismatch-at-step", "1"},
            "needs --fault-in"},
           {{"--parallel", "pp=2", "--mismatch", "op", "--mismatch-at-step", "1", "--fault-in",
             "pp"},
            "no reduction op"},
           {{"--parallel", "tp=2,qq=1"}, "not a parallel dimension"}}) {
    auto r = ParseOptions(b.args, nullptr, &help);
    ASSERT_FALSE(r.ok()) << b.says;
    EXPECT_NE(r.error().message().find(b.says), std::string::npos) << r.error().message();
  }
}

TEST(TrainerOptions, RankEnvironment) {
  g_env = {{"RANK", "5"},           {"LOCAL_RANK", "1"},
           {"WORLD_SIZE", "8"},     {"LOCAL_WORLD_SIZE", "2"},
           {"GROUP_RANK", "2"},     {"MASTER_ADDR", "10.0.0.1"},
           {"MASTER_PORT", "29501"}};
  auto e = ReadRankEnv(FakeGetenv);
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->rank, 5);
  EXPECT_EQ(e->local_rank, 1);
  EXPECT_EQ(e->world_size, 8);
  EXPECT_EQ(e->group_rank, 2);
  EXPECT_EQ(e->master_addr, "10.0.0.1");
  EXPECT_EQ(e->master_port, 29501);
  g_env["RANK"] = "8";
  EXPECT_FALSE(ReadRankEnv(FakeGetenv).ok());
  g_env["RANK"] = "x";
  auto bad = ReadRankEnv(FakeGetenv);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("RANK"), std::string::npos);
}

}  // namespace
}  // namespace trainer
