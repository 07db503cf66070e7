// The server's parts without a network: options, the bundle store, the query endpoint's work.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "recorder/serve/bundle_store.h"
#include "recorder/serve/query_service.h"
#include "recorder/serve/serve_options.h"
#include "rscore/file_checksum.h"
#include "tests/support/synth_bundle.h"

namespace rs::serve {
namespace {

TEST(ServeOptionsTest, Listen) {
  ServeOptions o;
  ASSERT_TRUE(ParseListen("10.0.0.3:7000", o).ok());
  EXPECT_EQ(o.host, "10.0.0.3");
  EXPECT_EQ(o.port, 7000);
  ASSERT_TRUE(ParseListen(":7443", o).ok());
  EXPECT_EQ(o.host, "0.0.0.0");
  ASSERT_TRUE(ParseListen("[::1]:7001", o).ok());
  EXPECT_EQ(o.host, "::1");
  EXPECT_EQ(o.port, 7001);
  ASSERT_TRUE(ParseListen("node3", o).ok());
  EXPECT_EQ(o.port, kDefaultPort);
  EXPECT_FALSE(ParseListen("a:99999", o).ok());
  EXPECT_FALSE(ParseListen("[::1", o).ok());
  // An IPv6 address without brackets is refused, as rankscope-fleet refuses it in a node list
  // (rs::ParseHostPort reads both): fd00::5:7443 could be either address.
  EXPECT_FALSE(ParseListen("fd00::5:7443", o).ok());
  ASSERT_TRUE(ParseListen("[fd00::5]:7443", o).ok());
  EXPECT_EQ(o.host, "fd00::5");
  EXPECT_EQ(o.port, 7443);
}

TEST(ServeOptionsTest, LimitsAndChecks) {
  ServeOptions o;
  ASSERT_TRUE(SetServeOption("max-queries", "3", o).ok());
  ASSERT_TRUE(SetServeOption("max-result-bytes", "2M", o).ok());
  ASSERT_TRUE(SetServeOption("query-timeout", "500ms", o).ok());
  EXPECT_EQ(o.max_queries, 3);
  EXPECT_EQ(o.max_result_bytes, 2 << 20);
  EXPECT_EQ(o.query_timeout_ns, 500'000'000);
  EXPECT_NE(SetServeOption("max-queries", "0", o).error().message().find("max-queries"),
            std::string::npos);
  EXPECT_FALSE(SetServeOption("max-rows", "x", o).ok());
  EXPECT_FALSE(SetServeOption("nonsense", "1", o).ok());
  auto no_cert = CheckServeOptions(o, "--serve-");
  ASSERT_FALSE(no_cert.ok());
  EXPECT_NE(no_cert.error().message().find("--serve-cert FILE"), std::string::npos);
  o.tls.cert = "n.pem";
  o.tls.key = "n.key";
  auto nobody = CheckServeOptions(o, "--");
  ASSERT_FALSE(nobody.ok());
  EXPECT_NE(nobody.error().message().find("--ca FILE"), std::string::npos);
  o.token_file = "t";
  EXPECT_TRUE(CheckServeOptions(o, "--").ok());
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char d[] = "/tmp/serve-store-XXXXXX";
    ASSERT_NE(mkdtemp(d), nullptr);
    dir_ = d;
    synth::ClusterSpec spec;
    spec.nodes = 2;
    spec.steps = 5;
    ASSERT_TRUE(synth::WriteClusterBundles(spec, dir_).ok());
    ASSERT_EQ(mkdir((dir_ + "/cut-1").c_str(), 0755), 0);
    ASSERT_EQ(rename((dir_ + "/node1.rsb").c_str(), (dir_ + "/cut-1/node1.rsb").c_str()), 0);
    std::ofstream(dir_ + "/.node0.rsb.part") << "partial";
    std::ofstream(dir_ + "/notes.txt") << "not a bundle";
    std::ofstream(dir_ + "/broken.rsb") << "not a bundle either";
    ASSERT_EQ(symlink("/etc/passwd", (dir_ + "/link.rsb").c_str()), 0);
  }
  void TearDown() override { (void)std::system(("rm -rf " + dir_).c_str()); }
  std::string dir_;
};

TEST_F(StoreTest, ListsBundlesWithSpansAndChecksums) {
  BundleStore store(dir_);
  auto l = store.List();
  ASSERT_TRUE(l.ok()) << l.error().message();
  ASSERT_EQ(l->bundles.size(), 2u);
  EXPECT_EQ(l->bundles[0].name, "cut-1/node1.rsb");
  EXPECT_EQ(l->bundles[0].node, "node1");
  EXPECT_EQ(l->bundles[1].name, "node0.rsb");
  EXPECT_EQ(l->bundles[1].kind, "bundle");
  EXPECT_GT(l->bundles[1].end_ns, l->bundles[1].start_ns);
  EXPECT_EQ(l->bundles[1].xxh64, *rs::FileXxh64(dir_ + "/node0.rsb"));
  ASSERT_EQ(l->skipped.size(), 1u);  // broken.rsb; the hidden file and the link are not looked at
  EXPECT_NE(l->skipped[0].find("broken.rsb"), std::string::npos);
}

TEST_F(StoreTest, FindsOnlyListedBundles) {
  BundleStore store(dir_);
  EXPECT_TRUE(store.Find("node0.rsb").ok());
  for (const char* name : {"../etc/passwd", "link.rsb", "/etc/passwd", ".node0.rsb.part",
                           "notes.txt", "broken.rsb", "cut-1/../node0.rsb"}) {
    EXPECT_FALSE(store.Find(name).ok()) << name;
  }
  auto newest = store.Newest();
  ASSERT_TRUE(newest.ok());
  auto opened = store.Open("node0.rsb");
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  auto again = store.Open("node0.rsb");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(opened->get(), again->get());  // decompressed once
  EXPECT_FALSE(BundleStore("").Newest().ok());
}

TEST_F(StoreTest, QueriesAreGuardedAndBounded) {
  BundleStore store(dir_);
  auto opened = store.Open("node0.rsb");
  ASSERT_TRUE(opened.ok());
  auto db = OpenQueryConnection((*opened)->sqlite_path(), "node0.rsb");
  ASSERT_TRUE(db.ok()) << db.error().message();
  const int64_t calls = *(*opened)->db().QueryInt("SELECT COUNT(*) FROM nccl_events");
  ASSERT_GT(calls, 3);
  rs::wire::QueryRequest req;
  req.sql = "SELECT seq, op, time_utc FROM nccl_events_v ORDER BY timestamp_ns";
  auto all = RunWireQuery(*db, req, "node0", "node0.rsb", {});
  ASSERT_TRUE(all.ok()) << all.error().message();
  auto reply = rs::wire::DecodeQueryReply(*all);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(static_cast<int64_t>(reply->rows.size()), calls);
  EXPECT_FALSE(reply->truncated);
  // The request's limit, the node's row limit, its size limit.
  req.limit = 2;
  reply = rs::wire::DecodeQueryReply(*RunWireQuery(*db, req, "node0", "s", {}));
  EXPECT_EQ(reply->rows.size(), 2u);
  EXPECT_EQ(reply->truncated_by, "rows");
  req.limit = 0;
  reply = rs::wire::DecodeQueryReply(*RunWireQuery(*db, req, "node0", "s", {.max_rows = 3}));
  EXPECT_EQ(reply->rows.size(), 3u);
  reply = rs::wire::DecodeQueryReply(
      *RunWireQuery(*db, req, "node0", "s", {.max_rows = 1000, .max_result_bytes = 400}));
  EXPECT_TRUE(reply->truncated);
  EXPECT_EQ(reply->truncated_by, "bytes");
  EXPECT_LT(reply->rows.size(), static_cast<size_t>(calls));
  // What rankscope-analyze query refuses.
  for (const char* sql :
       {"DELETE FROM nccl_events", "ATTACH '/tmp/x.db' AS x", "PRAGMA writable_schema=1",
        "SELECT load_extension('x')", "SELECT 1; SELECT 2"}) {
    req.sql = sql;
    EXPECT_FALSE(RunWireQuery(*db, req, "node0", "s", {}).ok()) << sql;
  }
  // The time limit: a query that would run for long stops.
  req.sql =
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c";
  req.timeout_ms = 200;
  auto slow = RunWireQuery(*db, req, "node0", "s", {});
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.error().message().find("time limit"), std::string::npos);
}

}  // namespace
}  // namespace rs::serve
