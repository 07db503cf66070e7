#include "analyzer/report_expect.h"

#include <gtest/gtest.h>

#include <iostream>

#include "analyzer/report_test_util.h"
#include "rscore/bundle.h"

namespace rs::analyzer::testing {

Report ReportOf(const std::string& path) {
  auto opened = rs::OpenRankscopeFile(path);
  EXPECT_TRUE(opened.ok()) << opened.error().message();
  if (!opened.ok()) return Report{};
  auto r = BuildReport(*opened);
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r.ok() ? std::move(r).value() : Report{};
}

Report EditedReport(const synth::ClusterSpec& spec, const std::string& sql,
                    int64_t error_bound_ns) {
  ScratchDir dir;
  auto path = WriteMergedCluster(spec, dir.path(), error_bound_ns);
  EXPECT_TRUE(path.ok()) << path.error().message();
  if (!path.ok()) return Report{};
  {
    auto db = rs::Db::Open(*path, rs::Db::Mode::kReadWrite);
    EXPECT_TRUE(db.ok()) << db.error().message();
    auto edited = db.ok() ? db->Exec(sql) : rs::Result<void>(db.error());
    EXPECT_TRUE(edited.ok()) << sql << ": " << edited.error().message();
  }
  return ReportOf(*path);
}

std::string NodeLate(const std::string& node, const std::string& also) {
  return "UPDATE nccl_events SET duration_ns = duration_ns + 6000000 WHERE op = 'ALL_REDUCE'" +
         also +
         ";UPDATE nccl_events SET timestamp_ns = timestamp_ns + 6000000,"
         " duration_ns = duration_ns - 6000000 WHERE node = '" +
         node + "' AND op = 'ALL_REDUCE'" + also;
}

synth::ClusterSpec HangOnNode1() {
  synth::ClusterSpec spec;
  spec.seed = TestSeed();
  spec.fault = "hang";
  spec.fault_node = 1;
  spec.fault_local_rank = 0;
  std::cout << "seed " << spec.seed << "\n";
  return spec;
}

}  // namespace rs::analyzer::testing
