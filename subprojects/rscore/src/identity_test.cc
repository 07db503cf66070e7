#include "rscore/identity.h"

#include <gtest/gtest.h>

#include <string>

namespace rs {
namespace {

TEST(Identity, PrecedenceFlagConfigEnvHostname) {
  NodeNameSources s{"flagnode", "cfgnode", "envnode", "host"};
  EXPECT_EQ(ResolveNodeName(s)->name, "flagnode");
  EXPECT_EQ(ResolveNodeName(s)->source, "flag");
  s.flag.reset();
  EXPECT_EQ(ResolveNodeName(s)->name, "cfgnode");
  s.config.reset();
  EXPECT_EQ(ResolveNodeName(s)->name, "envnode");
  s.env = "";
  EXPECT_EQ(ResolveNodeName(s)->name, "host");
  EXPECT_EQ(ResolveNodeName(s)->source, "hostname");
}

TEST(Identity, RejectsBadNamesNamingTheSource) {
  NodeNameSources s{"bad name", std::nullopt, std::nullopt, "host"};
  auto r = ResolveNodeName(s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("--node"), std::string::npos);
  s.flag = std::string(65, 'a');
  EXPECT_FALSE(ResolveNodeName(s).ok());
}

TEST(Identity, ConfigParsing) {
  auto c = ParseConfig("# comment\n node = gpu-17 \n\n", "x.conf");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->Get("node").value(), "gpu-17");
  auto bad = ParseConfig("node gpu\n", "x.conf");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("x.conf:1"), std::string::npos);
  EXPECT_FALSE(ParseConfig("colour = red\n", "x.conf").ok());
}

TEST(Identity, CudaLaunchBlockingIsOneOnlyForOne) {
  using namespace std::string_literals;
  EXPECT_EQ(ParseRankEnv("CUDA_LAUNCH_BLOCKING=1\0"s).cuda_launch_blocking, 1);
  EXPECT_EQ(ParseRankEnv("CUDA_LAUNCH_BLOCKING=0\0"s).cuda_launch_blocking, 0);
  EXPECT_EQ(ParseRankEnv("CUDA_LAUNCH_BLOCKING=yes\0RANK=1\0"s).cuda_launch_blocking, 0);
  EXPECT_FALSE(ParseRankEnv("CUDA_LAUNCH_BLOCKING=1\0"s).any());  // not a rank variable
}

TEST(Identity, RankEnvKeepsOnlyKnownVariables) {
  std::string block;
  for (const char* kv :
       {"PATH=/bin", "RANK=5", "LOCAL_RANK=1", "WORLD_SIZE=8", "SECRET=hunter2", "SLURM_PROCID=7",
        "SLURM_JOB_ID=991", "GROUP_RANK=2", "TORCHELASTIC_RUN_ID=abc"}) {
    block += kv;
    block.push_back('\0');
  }
  RankEnv e = ParseRankEnv(block);
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.group_rank, 2);
  EXPECT_EQ(e.slurm_procid, 7);
  EXPECT_EQ(e.slurm_job_id, "991");
  EXPECT_EQ(e.torchelastic_run_id, "abc");
  EXPECT_FALSE(e.local_world_size.has_value());
  EXPECT_EQ(e.global_rank(), 5);
  EXPECT_TRUE(e.any());
  EXPECT_FALSE(e.cuda_launch_blocking.has_value());
  RankEnv none = ParseRankEnv(std::string("RANK=x\0HOME=/root\0", 17));
  EXPECT_FALSE(none.rank.has_value());
  EXPECT_FALSE(none.any());
}

}  // namespace
}  // namespace rs
