#include "rscore/fleet_wire.h"

#include <gtest/gtest.h>

#include <cmath>

namespace rs::wire {
namespace {

TEST(FleetWireTest, QueryRequestRoundTrip) {
  QueryRequest r;
  r.sql = "SELECT \"a\" -- \xe2\x9c\x93\n";
  r.limit = 5;
  r.timeout_ms = 1500;
  r.bundle = "cut/node1.rsb";
  auto back = DecodeQueryRequest(EncodeQueryRequest(r));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->sql, r.sql);
  EXPECT_EQ(back->limit, 5);
  EXPECT_EQ(back->timeout_ms, 1500);
  EXPECT_EQ(back->bundle, "cut/node1.rsb");
}

TEST(FleetWireTest, QueryRequestErrorsNameTheField) {
  EXPECT_NE(DecodeQueryRequest("SELECT 1").error().message().find("not a JSON object"),
            std::string::npos);
  EXPECT_NE(DecodeQueryRequest("{}").error().message().find("\"sql\""), std::string::npos);
  EXPECT_NE(DecodeQueryRequest(R"({"sql": "x", "limit": -1})").error().message().find("limit"),
            std::string::npos);
  EXPECT_NE(
      DecodeQueryRequest(R"({"sql": "x", "timeout_ms": "1"})").error().message().find("timeout_ms"),
      std::string::npos);
}

TEST(FleetWireTest, CellsKeepTheirTypes) {
  QueryReplyWriter w("node3", "live", {"i", "r", "whole", "t", "n", "b"});
  w.BeginRow();
  w.Int(-9007199254740993);  // not exact as a double
  w.Real(0.1);
  w.Real(2.0);  // a whole real stays a real
  w.Text("caf\xc3\xa9 \"q\"\n");
  w.Null();
  w.BlobValue(std::string("\x00\xff\x10", 3));
  w.EndRow();
  auto r = DecodeQueryReply(w.Finish(false, "", 1234));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->node, "node3");
  EXPECT_EQ(r->source, "live");
  ASSERT_EQ(r->columns.size(), 6u);
  ASSERT_EQ(r->rows.size(), 1u);
  const auto& row = r->rows[0];
  EXPECT_EQ(std::get<int64_t>(row[0]), -9007199254740993);
  EXPECT_EQ(std::get<double>(row[1]), 0.1);
  ASSERT_TRUE(std::holds_alternative<double>(row[2]));
  EXPECT_EQ(std::get<double>(row[2]), 2.0);
  EXPECT_EQ(std::get<std::string>(row[3]), "caf\xc3\xa9 \"q\"\n");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(row[4]));
  EXPECT_EQ(std::get<Blob>(row[5]).bytes, std::string("\x00\xff\x10", 3));
  EXPECT_EQ(r->elapsed_ns, 1234);
  EXPECT_FALSE(r->truncated);
}

TEST(FleetWireTest, InvalidUtf8BecomesReplacementCharacters) {
  QueryReplyWriter w("n", "live", {"t"});
  w.BeginRow();
  w.Text(
      "a\xff"
      "b");
  w.EndRow();
  auto r = DecodeQueryReply(w.Finish(false, "", 0));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(std::get<std::string>(r->rows[0][0]),
            "a\xef\xbf\xbd"
            "b");
}

TEST(FleetWireTest, AnAbandonedRowLeavesValidJson) {
  QueryReplyWriter w("n", "b.rsb", {"x"});
  w.BeginRow();
  w.Int(1);
  w.EndRow();
  const size_t before = w.size();
  w.BeginRow();
  w.Text(std::string(1000, 'x'));
  w.AbandonRow();
  EXPECT_EQ(w.size(), before);
  auto r = DecodeQueryReply(w.Finish(true, "bytes", 0));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->rows.size(), 1u);
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->truncated_by, "bytes");
}

TEST(FleetWireTest, ReplyErrors) {
  EXPECT_FALSE(DecodeQueryReply("{").ok());
  auto bad = DecodeQueryReply(R"({"node":"n","source":"s","columns":["a","b"],"rows":[[1]]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("1 cells for 2 columns"), std::string::npos);
  EXPECT_FALSE(
      DecodeQueryReply(R"({"node":"n","source":"s","columns":["a"],"rows":[[{"hex":"0"}]]})").ok());
  EXPECT_FALSE(
      DecodeQueryReply(R"({"node":"n","source":"s","columns":["a"],"rows":[[[1]]]})").ok());
}

TEST(FleetWireTest, BundleListRoundTripAndOverlap) {
  BundleEntry b{"cuts/x/node1.rsb", "node1", "cut", 100, 200, 4096, "0123456789abcdef"};
  auto list = DecodeBundleList(EncodeBundleList("node1", {b}));
  ASSERT_TRUE(list.ok()) << list.error().message();
  EXPECT_EQ(list->node, "node1");
  ASSERT_EQ(list->bundles.size(), 1u);
  const BundleEntry& e = list->bundles[0];
  EXPECT_EQ(e.name, b.name);
  EXPECT_EQ(e.kind, "cut");
  EXPECT_EQ(e.start_ns, 100);
  EXPECT_EQ(e.end_ns, 200);
  EXPECT_EQ(e.bytes, 4096);
  EXPECT_EQ(e.xxh64, b.xxh64);
  EXPECT_TRUE(Overlaps(b, 0, 0));
  EXPECT_TRUE(Overlaps(b, 150, 0));
  EXPECT_TRUE(Overlaps(b, 200, 300));
  EXPECT_FALSE(Overlaps(b, 201, 0));
  EXPECT_FALSE(Overlaps(b, 0, 99));
  EXPECT_FALSE(DecodeBundleList(R"({"node":"n","bundles":[{"name":"x"}]})").ok());
}

TEST(FleetWireTest, TimeAndErrors) {
  auto t = DecodeTime(EncodeTime("node2", 1764070681123456789));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->node, "node2");
  EXPECT_EQ(t->time_ns, 1764070681123456789);
  EXPECT_EQ(DecodeError(EncodeError("query refused: INSERT")), "query refused: INSERT");
  EXPECT_EQ(DecodeError("<html>\nbad</html>"), "<html> bad</html>");
  EXPECT_EQ(DecodeError(""), "(no message)");
}

}  // namespace
}  // namespace rs::wire
