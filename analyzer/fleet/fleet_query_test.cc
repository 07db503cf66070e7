#include "analyzer/fleet/fleet_query.h"

#include <gtest/gtest.h>

#include <sstream>

namespace rs::fleet {
namespace {

NodeAnswer Answer(const std::string& name, std::vector<std::string> columns,
                  std::vector<std::vector<rs::wire::Value>> rows) {
  NodeAnswer a;
  a.name = name;
  a.address.host = name;
  a.reply.node = name;
  a.reply.columns = std::move(columns);
  a.reply.rows = std::move(rows);
  return a;
}

TEST(FleetQueryTest, OneTableWithALeadingNodeColumn) {
  std::vector<NodeAnswer> answers = {
      Answer("node1", {"op", "n"}, {{std::string("ALL_REDUCE"), int64_t{12}}}),
      Answer("node2", {"op", "n"},
             {{std::string("ALL_REDUCE"), int64_t{11}}, {std::string("a,b"), 2.5}}),
  };
  std::vector<std::string> warnings;
  std::ostringstream csv;
  auto rows = PrintCombined(answers, rs::analyzer::OutputFormat::kCsv, csv, warnings);
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  EXPECT_EQ(*rows, 3);
  EXPECT_EQ(csv.str(), "node,op,n\nnode1,ALL_REDUCE,12\nnode2,ALL_REDUCE,11\nnode2,\"a,b\",2.5\n");
  EXPECT_TRUE(warnings.empty());
  std::ostringstream json;
  ASSERT_TRUE(PrintCombined(answers, rs::analyzer::OutputFormat::kJson, json, warnings).ok());
  EXPECT_NE(json.str().find(R"({"node": "node1", "op": "ALL_REDUCE", "n": 12})"), std::string::npos)
      << json.str();
}

TEST(FleetQueryTest, CellsPrintAsQueryPrintsThem) {
  // NULL, a blob and a whole real: as rankscope-analyze query's table shows them.
  std::vector<NodeAnswer> answers = {
      Answer("n1", {"a", "b", "c"},
             {{std::monostate{}, rs::wire::Blob{std::string("\x01\xff", 2)}, 3.0}})};
  std::vector<std::string> warnings;
  std::ostringstream table;
  ASSERT_TRUE(PrintCombined(answers, rs::analyzer::OutputFormat::kTable, table, warnings).ok());
  EXPECT_EQ(table.str(),
            "node  a     b        c\n----  ----  -------  ---\nn1    NULL  x'01ff'  3.0\n");
}

TEST(FleetQueryTest, ANodeWithOtherColumnsIsLeftOutWithAWarning) {
  std::vector<NodeAnswer> answers = {Answer("node1", {"x"}, {{int64_t{1}}}),
                                     Answer("node2", {"x", "y"}, {{int64_t{2}, int64_t{3}}})};
  std::vector<std::string> warnings;
  std::ostringstream csv;
  auto rows = PrintCombined(answers, rs::analyzer::OutputFormat::kCsv, csv, warnings);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, 1);
  EXPECT_EQ(csv.str(), "node,x\nnode1,1\n");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("node2"), std::string::npos);
  EXPECT_FALSE(answers[1].status.ok());
}

TEST(FleetQueryTest, NoAnswerIsAnError) {
  std::vector<NodeAnswer> answers = {Answer("node1", {"x"}, {})};
  answers[0].status = rs::Error("down");
  std::vector<std::string> warnings;
  std::ostringstream out;
  EXPECT_FALSE(PrintCombined(answers, rs::analyzer::OutputFormat::kCsv, out, warnings).ok());
}

TEST(FleetQueryTest, EmptyResultsStillHaveTheirHeader) {
  std::vector<NodeAnswer> answers = {Answer("node1", {"x"}, {}), Answer("node2", {"x"}, {})};
  std::vector<std::string> warnings;
  std::ostringstream csv;
  ASSERT_TRUE(PrintCombined(answers, rs::analyzer::OutputFormat::kCsv, csv, warnings).ok());
  EXPECT_EQ(csv.str(), "node,x\n");
}

}  // namespace
}  // namespace rs::fleet
