#include "synth_bundle.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "rscore/bundle.h"

namespace synth {
namespace {

int64_t Count(rs::Db& db, const std::string& sql) { return db.QueryInt(sql).value(); }

TEST(SynthBundle, WritesValidBundlesWithExpectedRows) {
  char tmpl[] = "/tmp/synth_test.XXXXXX";
  std::string dir = mkdtemp(tmpl);
  ClusterSpec spec;
  spec.fault = "loss";
  spec.offset_ns = {0, 3'000'000, -2'000'000, 0};
  auto paths = WriteClusterBundles(spec, dir);
  ASSERT_TRUE(paths.ok()) << paths.error().message();
  ASSERT_EQ(paths->size(), 4u);
  RowCounts want = ExpectedRows(spec);
  RowCounts got;
  for (const auto& p : *paths) {
    auto db = rs::OpenRankscopeFile(p);
    ASSERT_TRUE(db.ok()) << db.error().message();
    got.nccl += Count(db->db(), "SELECT COUNT(*) FROM nccl_events");
    got.tcp += Count(db->db(), "SELECT COUNT(*) FROM tcp_events");
    got.sched += Count(db->db(), "SELECT COUNT(*) FROM sched_events");
    // Every collective seq appears once per rank of this node.
    EXPECT_EQ(Count(db->db(),
                    "SELECT COUNT(*) FROM (SELECT seq FROM nccl_events WHERE seq IS NOT "
                    "NULL GROUP BY seq HAVING COUNT(*) != 2)"),
              0);
  }
  EXPECT_EQ(got.nccl, want.nccl);
  EXPECT_EQ(got.tcp, want.tcp);
  EXPECT_EQ(got.sched, want.sched);
  EXPECT_GT(want.tcp, 0);
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace synth
