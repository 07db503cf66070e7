#include "rscore/bundle.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "rscore/event_id.h"
#include "rscore/zstd_file.h"

namespace rs {
namespace {

std::string TmpDir() {
  char tmpl[] = "/tmp/rscore_test.XXXXXX";
  return mkdtemp(tmpl);
}

Result<void> WriteSmallBundle(const std::string& path, const std::string& node) {
  ASSIGN_OR_RETURN(BundleWriter w, BundleWriter::Create(path));
  std::string rid = NewRecordingId();
  RETURN_IF_ERROR(w.SetMetadata("recording_id", rid));
  RETURN_IF_ERROR(w.SetMetadata("node", node));
  RETURN_IF_ERROR(w.SetMetadata("start_ns", "100"));
  RETURN_IF_ERROR(w.SetMetadata("end_ns", "200"));
  EventIdAllocator ids(RecordingKey(rid));
  ASSIGN_OR_RETURN(
      Statement st,
      w.db().Prepare(
          "INSERT INTO tcp_events(id, node, timestamp_ns, event, family, saddr, daddr, sport, "
          "dport) "
          "VALUES (?, ?, ?, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 1, 2)"));
  for (int i = 0; i < 1000; ++i)
    RETURN_IF_ERROR(st.Bind(1, ids.Next()).Bind(2, node).Bind(3, i).Run());
  return w.Finalize();
}

TEST(Bundle, RoundTripModeAndReadBack) {
  std::string dir = TmpDir();
  std::string path = dir + "/n1.rsb";
  ASSERT_TRUE(WriteSmallBundle(path, "n1").ok());
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(HasZstdMagic(path));
  auto opened = OpenRankscopeFile(path);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  EXPECT_EQ(opened->info().node, "n1");
  EXPECT_EQ(opened->info().db_kind, "bundle");
  EXPECT_EQ(opened->info().end_ns, 200);
  EXPECT_EQ(opened->db().QueryInt("SELECT COUNT(*) FROM tcp_events").value(), 1000);
  EXPECT_EQ(opened->db().QueryInt("SELECT COUNT(DISTINCT id) FROM tcp_events").value(), 1000);
  // No temp files left beside the bundle.
  EXPECT_EQ(std::system(("test $(ls -A " + dir + " | wc -l) -eq 1").c_str()), 0);
}

TEST(Bundle, TruncatedAndCorruptAreRejectedByName) {
  std::string dir = TmpDir();
  std::string path = dir + "/n2.rsb";
  ASSERT_TRUE(WriteSmallBundle(path, "n2").ok());
  struct stat st {};
  stat(path.c_str(), &st);
  std::string trunc = dir + "/trunc.rsb";
  ASSERT_EQ(std::system(
                ("head -c " + std::to_string(st.st_size / 2) + " " + path + " > " + trunc).c_str()),
            0);
  auto r = OpenRankscopeFile(trunc);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("trunc.rsb"), std::string::npos);
  EXPECT_NE(r.error().message().find("truncated"), std::string::npos);

  std::string text = dir + "/notes.txt";
  std::ofstream(text) << "hello";
  auto t = OpenRankscopeFile(text);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("not a rankscope bundle"), std::string::npos);

  std::string empty = dir + "/empty.rsb";
  std::ofstream(empty).close();
  EXPECT_FALSE(OpenRankscopeFile(empty).ok());
}

// Every tool reading a bundle keeps the recorder's and the merge's node-name rule.
TEST(Bundle, NodeNameOutsideTheRuleIsRefused) {
  std::string dir = TmpDir();
  for (const char* bad : {"../../etc", "<script>", "a b"}) {
    std::string path = dir + "/bad.rsb";
    ASSERT_TRUE(WriteSmallBundle(path, bad).ok());
    auto r = OpenRankscopeFile(path);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message().find("node name"), std::string::npos) << r.error().message();
    unlink(path.c_str());
  }
}

TEST(Bundle, UnwritableOutputIsAnError) {
  auto r = BundleWriter::Create("/nonexistent-dir/x.rsb");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("does not exist"), std::string::npos);
}

TEST(Bundle, EventIdsAreNamespaced) {
  uint32_t a = RecordingKey("aaaa"), b = RecordingKey("bbbb");
  EXPECT_NE(a, b);
  EventIdAllocator ia(a), ib(b);
  int64_t x = ia.Next(), y = ib.Next();
  EXPECT_NE(x, y);
  EXPECT_EQ(EventIdRecordingKey(x), a);
  EXPECT_GT(x, 0);
}

}  // namespace
}  // namespace rs
