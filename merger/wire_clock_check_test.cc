#include "merger/wire_clock_check.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "rscore/wire_clock_file.h"

namespace rs::merge {
namespace {

NodeAlignment Aligned(const std::string& node, int64_t offset, int64_t bound,
                      const std::string& method = "rendezvous") {
  NodeAlignment a;
  a.node = node;
  a.offset_ns = offset;
  a.error_bound_ns = bound;
  a.method = method;
  return a;
}

rs::WireClock Wire(const std::string& node, int64_t offset, int64_t bound) {
  rs::WireClock w;
  w.node = node;
  w.offset_ns = offset;
  w.bound_ns = bound;
  return w;
}

TEST(WireClockCheckTest, AgreementWithinTheSumOfTheBounds) {
  // node1 is 3 ms ahead of node0 by the rendezvous; the workstation is 10 ms off both.
  const std::vector<NodeAlignment> al = {Aligned("node0", 0, 0, "reference"),
                                         Aligned("node1", 3'000'000, 20'000),
                                         Aligned("node2", -1'000'000, 20'000)};
  const std::vector<rs::WireClock> wire = {Wire("node1", 10'000'000 + 3'050'000, 40'000),
                                           Wire("node0", 10'000'000, 40'000),
                                           Wire("node2", 10'000'000 - 1'200'000, 40'000)};
  auto checks = CheckWireClocks(al, wire);
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].node, "node1");
  EXPECT_EQ(checks[0].against, "node0");
  EXPECT_EQ(checks[0].alignment_ns, 3'000'000);
  EXPECT_EQ(checks[0].wire_ns, 3'050'000);
  EXPECT_EQ(checks[0].bound_ns, 100'000);
  EXPECT_TRUE(checks[0].agrees);  // 50 us apart, bound 100 us
  EXPECT_NE(checks[0].note.find("agrees"), std::string::npos);
  EXPECT_EQ(checks[1].node, "node2");
  EXPECT_FALSE(checks[1].agrees);  // 200 us apart, bound 100 us
  EXPECT_NE(checks[1].note.find("disagrees"), std::string::npos);
}

TEST(WireClockCheckTest, WithoutTheReferencesWireClockTheFirstNodeWithOneIsTheBase) {
  const std::vector<NodeAlignment> al = {Aligned("node0", 0, 0, "reference"),
                                         Aligned("node1", 2'000'000, 10'000),
                                         Aligned("node2", 5'000'000, 10'000)};
  const std::vector<rs::WireClock> wire = {Wire("node1", 2'000'000, 5'000),
                                           Wire("node2", 5'000'000, 5'000)};
  auto checks = CheckWireClocks(al, wire);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].node, "node2");
  EXPECT_EQ(checks[0].against, "node1");
  EXPECT_EQ(checks[0].alignment_ns, 3'000'000);
  EXPECT_TRUE(checks[0].agrees);
  EXPECT_TRUE(CheckWireClocks(al, {Wire("node1", 0, 1)}).empty());  // nothing to compare with
  EXPECT_TRUE(CheckWireClocks(al, {}).empty());
}

TEST(WireClockCheckTest, ReadsTheFileBesideTheInputs) {
  char dir[] = "/tmp/wire-check-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string d = dir;
  ASSERT_TRUE(rs::WriteWireClockFile(d + "/" + rs::kWireClockFileName,
                                     {Wire("node0", 1, 2), Wire("node1", 3, 4)})
                  .ok());
  std::vector<std::string> files;
  // The directory and a file in it: one file read.
  auto w = ReadWireClocksBeside({d, d + "/node0.rsb"}, files);
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_EQ(files.size(), 1u);
  ASSERT_EQ(w->size(), 2u);
  EXPECT_EQ((*w)[1].offset_ns, 3);
  {
    FILE* f = std::fopen((d + "/" + rs::kWireClockFileName).c_str(), "w");
    std::fputs("{", f);
    std::fclose(f);
  }
  files.clear();
  auto bad = ReadWireClocksBeside({d}, files);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find(rs::kWireClockFileName), std::string::npos);
  std::remove((d + "/" + rs::kWireClockFileName).c_str());
  files.clear();
  auto none = ReadWireClocksBeside({d}, files);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_TRUE(files.empty());
  rmdir(dir);
}

}  // namespace
}  // namespace rs::merge
