#include "analyzer/fleet/node_list.h"

#include <gtest/gtest.h>

namespace rs::fleet {
namespace {

TEST(NodeListTest, HostListExpandsRanges) {
  auto n = ParseHostList("node[1-3]:7000,gpu-a.lab,[fd00::5]:7443,10.0.0.[9-10]");
  ASSERT_TRUE(n.ok()) << n.error().message();
  ASSERT_EQ(n->size(), 7u);
  EXPECT_EQ((*n)[0].address(), "node1:7000");
  EXPECT_EQ((*n)[2].address(), "node3:7000");
  EXPECT_EQ((*n)[3].address(), "gpu-a.lab:7443");
  EXPECT_EQ((*n)[4].host, "fd00::5");
  EXPECT_EQ((*n)[4].address(), "[fd00::5]:7443");
  EXPECT_EQ((*n)[5].address(), "10.0.0.9:7443");
  EXPECT_EQ((*n)[6].address(), "10.0.0.10:7443");
  EXPECT_TRUE((*n)[0].name.empty());
  EXPECT_EQ((*n)[0].label(), "node1:7000");
}

TEST(NodeListTest, RangesKeepLeadingZerosAndNest) {
  auto n = ParseHostList("r[1-2]n[08-09]");
  ASSERT_TRUE(n.ok()) << n.error().message();
  ASSERT_EQ(n->size(), 4u);
  EXPECT_EQ((*n)[0].host, "r1n08");
  EXPECT_EQ((*n)[1].host, "r1n09");
  EXPECT_EQ((*n)[3].host, "r2n09");
}

TEST(NodeListTest, HostListErrors) {
  EXPECT_NE(ParseHostList("node[3-1]").error().message().find("FIRST <= LAST"), std::string::npos);
  EXPECT_NE(ParseHostList("node[1-").error().message().find("without ']'"), std::string::npos);
  EXPECT_NE(ParseHostList("a:0").error().message().find("port"), std::string::npos);
  EXPECT_NE(ParseHostList("fd00::5").error().message().find("brackets"), std::string::npos);
  EXPECT_NE(ParseHostList("a,a").error().message().find("listed twice"), std::string::npos);
  EXPECT_NE(ParseHostList("a;b").error().message().find("not a host"), std::string::npos);
  EXPECT_NE(ParseHostList(" , ").error().message().find("no nodes"), std::string::npos);
}

TEST(NodeListTest, FileNamesNodes) {
  auto n = ParseNodeFile("# the cluster\nnode1 10.0.0.1:7443\n\n10.0.0.2  # unnamed\n", "n.txt");
  ASSERT_TRUE(n.ok()) << n.error().message();
  ASSERT_EQ(n->size(), 2u);
  EXPECT_EQ((*n)[0].name, "node1");
  EXPECT_EQ((*n)[0].label(), "node1");
  EXPECT_EQ((*n)[1].name, "");
  EXPECT_EQ((*n)[1].address(), "10.0.0.2:7443");
}

TEST(NodeListTest, FileErrorsNameTheLine) {
  auto bad = ParseNodeFile("node1 10.0.0.1\nnode2 a b\n", "n.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("n.txt:2"), std::string::npos);
  auto name = ParseNodeFile("no/de 10.0.0.1\n", "n.txt");
  ASSERT_FALSE(name.ok());
  EXPECT_NE(name.error().message().find("n.txt:1"), std::string::npos);
  auto twice = ParseNodeFile("a 10.0.0.1\na 10.0.0.2\n", "n.txt");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message().find("two nodes"), std::string::npos);
}

TEST(NodeListTest, APathThatIsNoFileIsAnError) {
  auto n = ParseNodes("/nonexistent/nodes.txt");
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message().find("no such file"), std::string::npos);
}

}  // namespace
}  // namespace rs::fleet
