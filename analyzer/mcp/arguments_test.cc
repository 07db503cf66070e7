#include "analyzer/mcp/arguments.h"

#include <gtest/gtest.h>

namespace rs::analyzer::mcp {
namespace {

const std::vector<Param> kParams = {
    Param("node", Param::Type::kString, "a node").Required(),
    Param("seq", Param::Type::kInteger, "a sequence").Range(0, 100),
    Param("comm", Param::Type::kStringOrInteger, "a communicator"),
    Param("kinds", Param::Type::kStringList, "kinds").Choices({"tcp", "sched"}),
    Param("all", Param::Type::kBoolean, "everything"),
};

std::string ErrorOf(const Json& arguments) {
  auto r = Args::Check("t", kParams, arguments);
  return r.ok() ? "" : r.error().message();
}

TEST(InputSchema, DeclaresTypesRequiredAndNoOtherProperties) {
  const Json s = InputSchema(kParams);
  EXPECT_EQ(s["type"], "object");
  EXPECT_EQ(s["required"], Json::array({"node"}));
  EXPECT_EQ(s["additionalProperties"], false);
  EXPECT_EQ(s["properties"]["seq"]["type"], "integer");
  EXPECT_EQ(s["properties"]["seq"]["minimum"], 0);
  EXPECT_EQ(s["properties"]["seq"]["maximum"], 100);
  EXPECT_EQ(s["properties"]["comm"]["type"], Json::array({"string", "integer"}));
  EXPECT_EQ(s["properties"]["kinds"]["items"]["enum"], Json::array({"tcp", "sched"}));
  EXPECT_EQ(s["properties"]["all"]["type"], "boolean");
  EXPECT_EQ(s["properties"]["node"]["description"], "a node");
  // A tool without arguments still has an object schema.
  EXPECT_EQ(InputSchema({})["type"], "object");
  EXPECT_FALSE(InputSchema({}).contains("required"));
}

TEST(Args, AcceptsWhatTheSchemaAllows) {
  auto r = Args::Check("t", kParams,
                       {{"node", "node1"},
                        {"seq", 7.0},
                        {"comm", 12},
                        {"kinds", Json::array({"tcp"})},
                        {"all", true}});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->String("node"), "node1");
  EXPECT_EQ(r->Int("seq"), 7);  // 7.0 is an integer to JSON Schema
  EXPECT_EQ(r->Text("comm"), "12");
  EXPECT_EQ(r->Strings("kinds"), std::vector<std::string>({"tcp"}));
  EXPECT_TRUE(r->Bool("all", false));
  EXPECT_FALSE(r->Has("missing"));
  auto hex = Args::Check("t", kParams, {{"node", "n"}, {"comm", "0x1f"}});
  ASSERT_TRUE(hex.ok());
  EXPECT_EQ(hex->Text("comm"), "0x1f");
}

TEST(Args, ErrorsNameTheArgumentAndWhatIsExpected) {
  EXPECT_EQ(ErrorOf(Json::object()), "tool t: argument 'node' is required (a node)");
  EXPECT_EQ(ErrorOf(nullptr), "tool t: argument 'node' is required (a node)");
  EXPECT_EQ(ErrorOf({{"node", 3}}), "tool t: argument 'node' must be a string, got the number 3");
  EXPECT_EQ(ErrorOf({{"node", "n"}, {"seq", "12"}}),
            "tool t: argument 'seq' must be an integer, got the string \"12\"");
  EXPECT_EQ(ErrorOf({{"node", "n"}, {"seq", 1.5}}),
            "tool t: argument 'seq' must be an integer, got the number 1.5");
  EXPECT_EQ(ErrorOf({{"node", "n"}, {"seq", 101}}),
            "tool t: argument 'seq' must be an integer from 0 to 100, got 101");
  EXPECT_EQ(ErrorOf({{"node", "n"}, {"kinds", Json::array({"tcp", "gpu"})}}),
            "tool t: argument 'kinds' must be one of tcp, sched, got the string \"gpu\"");
  EXPECT_EQ(ErrorOf({{"node", "n"}, {"kinds", "tcp"}}),
            "tool t: argument 'kinds' must be an array of strings, got the string \"tcp\"");
  EXPECT_EQ(ErrorOf({{"node", "n"}, {"all", "yes"}}),
            "tool t: argument 'all' must be true or false, got the string \"yes\"");
  EXPECT_EQ(ErrorOf({{"node", "n"}, {"comm", Json::object()}}),
            "tool t: argument 'comm' must be a string or an integer, got an object");
  EXPECT_EQ(ErrorOf({{"node", "n"}, {"nodes", "x"}}),
            "tool t: unknown argument 'nodes' (it takes: node, seq, comm, kinds, all)");
  EXPECT_EQ(ErrorOf(Json::array()), "tool t: \"arguments\" must be an object, got an array");
  auto none = Args::Check("u", {}, {{"x", 1}});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message(), "tool u: unknown argument 'x' (it takes no arguments)");
}

}  // namespace
}  // namespace rs::analyzer::mcp
