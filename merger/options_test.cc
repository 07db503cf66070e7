#include "merger/options.h"

#include <gtest/gtest.h>

namespace rs::merge {
namespace {

rs::Result<CommandLine> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "rankscope-merge");
  return ParseCommandLine(static_cast<int>(args.size()), args.data());
}

TEST(Options, InputsOutputAndFlags) {
  auto cl = Parse({"-o", "run.rsdb", "a.rsb", "bundles/", "--strict", "--reference", "node2"});
  ASSERT_TRUE(cl.ok()) << cl.error().message();
  EXPECT_EQ(cl->merge.out_path, "run.rsdb");
  EXPECT_EQ(cl->merge.inputs, (std::vector<std::string>{"a.rsb", "bundles/"}));
  EXPECT_TRUE(cl->merge.strict);
  EXPECT_EQ(cl->merge.reference_node, "node2");
  EXPECT_FALSE(cl->merge.bundle_path.has_value());
}

TEST(Options, BundleIsWrittenNextToTheOutput) {
  auto cl = Parse({"--out=run.rsdb", "--bundle", "a.rsb"});
  ASSERT_TRUE(cl.ok()) << cl.error().message();
  EXPECT_EQ(cl->merge.bundle_path.value(), "run.rsdb.zst");
  EXPECT_EQ(cl->merge.inputs, std::vector<std::string>{"a.rsb"});
}

TEST(Options, ErrorsNameTheFlag) {
  auto cl = Parse({"a.rsb"});
  ASSERT_FALSE(cl.ok());
  EXPECT_NE(cl.error().message().find("--out"), std::string::npos);
  cl = Parse({"-o", "x.rsdb"});
  ASSERT_FALSE(cl.ok());
  EXPECT_NE(cl.error().message().find("no inputs"), std::string::npos);
  cl = Parse({"-o", "x.rsdb", "--frobnicate", "a.rsb"});
  ASSERT_FALSE(cl.ok());
  EXPECT_NE(cl.error().message().find("frobnicate"), std::string::npos) << cl.error().message();
}

TEST(Options, HelpNeedsNothingElse) {
  auto cl = Parse({"--help"});
  ASSERT_TRUE(cl.ok());
  EXPECT_TRUE(cl->help);
  EXPECT_NE(cl->help_text.find("exit status"), std::string::npos);
}

}  // namespace
}  // namespace rs::merge
