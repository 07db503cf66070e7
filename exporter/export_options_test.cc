#include "exporter/export_options.h"

#include <gtest/gtest.h>

#include <vector>

namespace rs::exporter {
namespace {

Result<CommandLine> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "rankscope-export");
  return ParseCommandLine(static_cast<int>(args.size()), args.data());
}

TEST(ParseTimePoint, AbsoluteNanoseconds) {
  auto t = ParseTimePoint("1760000000123456789", "--from");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_FALSE(t->relative);
  EXPECT_EQ(t->ns, 1760000000123456789);
  EXPECT_EQ(t->Resolve(5), 1760000000123456789);
}

TEST(ParseTimePoint, RelativeToFirstEvent) {
  auto t = ParseTimePoint("+1.5s", "--from");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_TRUE(t->relative);
  EXPECT_EQ(t->ns, 1'500'000'000);
  EXPECT_EQ(t->Resolve(1000), 1'500'001'000);
  auto ms = ParseTimePoint("+250ms", "--to");
  ASSERT_TRUE(ms.ok());
  EXPECT_EQ(ms->ns, 250'000'000);
  auto zero = ParseTimePoint("+0", "--from");
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->Resolve(77), 77);
}

TEST(ParseTimePoint, RejectsGarbageAndNamesTheFlag) {
  for (const char* bad : {"", "abc", "12x", "+", "+1.5parsecs", "99999999999999999999", "-5"}) {
    auto t = ParseTimePoint(bad, "--to");
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.error().message().find("--to"), std::string::npos) << t.error().message();
  }
}

TEST(ParseCommandLine, DefaultsAndFormatFromExtension) {
  auto cl = Parse({"in.rsdb", "-o", "out.pftrace"});
  ASSERT_TRUE(cl.ok()) << cl.error().message();
  EXPECT_EQ(cl->options.input, "in.rsdb");
  EXPECT_EQ(cl->options.output, "out.pftrace");
  EXPECT_EQ(cl->options.format, Format::kPerfetto);
  EXPECT_FALSE(cl->options.from.has_value());
  auto json = Parse({"in.rsdb", "-o", "out.json"});
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(json->options.format, Format::kChromeJson);
  auto forced = Parse({"in.rsdb", "-o", "out.json", "--format", "perfetto"});
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ(forced->options.format, Format::kPerfetto);
}

TEST(ParseCommandLine, WindowAndNodes) {
  auto cl = Parse({"in.rsb", "-o", "x", "--from", "+1s", "--to", "1795763715123456789", "--nodes",
                   "node1, node3", "--nodes", "node7"});
  ASSERT_TRUE(cl.ok()) << cl.error().message();
  ASSERT_TRUE(cl->options.from && cl->options.to);
  EXPECT_TRUE(cl->options.from->relative);
  EXPECT_EQ(cl->options.to->ns, 1795763715123456789);
  EXPECT_EQ(cl->options.nodes, (std::vector<std::string>{"node1", "node3", "node7"}));
}

TEST(ParseCommandLine, ErrorsSayWhatToDo) {
  auto no_out = Parse({"in.rsdb"});
  ASSERT_FALSE(no_out.ok());
  EXPECT_NE(no_out.error().message().find("-o"), std::string::npos);
  auto no_in = Parse({"-o", "x"});
  ASSERT_FALSE(no_in.ok());
  EXPECT_NE(no_in.error().message().find("INPUT"), std::string::npos);
  auto two = Parse({"a.rsb", "b.rsb", "-o", "x"});
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.error().message().find("rankscope-merge"), std::string::npos);
  auto fmt = Parse({"a.rsb", "-o", "x", "--format", "svg"});
  ASSERT_FALSE(fmt.ok());
  EXPECT_NE(fmt.error().message().find("svg"), std::string::npos);
  auto unknown = Parse({"a.rsb", "-o", "x", "--bogus"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("--bogus"), std::string::npos);
  auto quiet = Parse({"a.rsb", "-o", "x", "-q"});
  ASSERT_TRUE(quiet.ok()) << quiet.error().message();
  EXPECT_TRUE(quiet->quiet);
  auto loud = Parse({"a.rsb", "-o", "x"});
  ASSERT_TRUE(loud.ok()) << loud.error().message();
  EXPECT_FALSE(loud->quiet);
}

TEST(ParseCommandLine, Help) {
  auto cl = Parse({"--help"});
  ASSERT_TRUE(cl.ok());
  EXPECT_TRUE(cl->help);
  EXPECT_NE(cl->usage.find("--nodes"), std::string::npos);
  EXPECT_NE(cl->usage.find("+1.5s"), std::string::npos);
}

}  // namespace
}  // namespace rs::exporter
