#include "recorder/attach_log.h"

#include <gtest/gtest.h>

#include "recorder/log.h"

#include <cstdio>
#include <cstring>

#include "recorder/test_db.h"

namespace rs::rec {
namespace {

std::string Captured(FILE* f) {
  std::fflush(f);
  std::rewind(f);
  char buf[4096] = {};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  return std::string(buf, n);
}

TEST(AttachLog, RowsAndLogLines) {
  testing::TestDb t;
  FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  FILE* old = SetLogSink(log);
  AttachLog quiet(&t.db, "n1", /*verbose=*/false);
  quiet.Record("tracepoint", "sched_switch", "", true);
  quiet.Record("nccl", "/usr/lib/libnccl.so.2", "ncclAllReduce", false, "no such symbol", "ab12");
  EXPECT_EQ(quiet.failures(), 1);
  EXPECT_TRUE(quiet.write_status().ok());
  std::string out = Captured(log);
  EXPECT_EQ(out.find("sched_switch"), std::string::npos) << "successes only with -v";
  EXPECT_NE(out.find("could not attach nccl /usr/lib/libnccl.so.2:ncclAllReduce: no such symbol"),
            std::string::npos)
      << out;
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM attachments"), 2);
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM attachments WHERE ok = 1 AND symbol IS NULL AND error "
                  "IS NULL AND build_id IS NULL"),
            1);
  EXPECT_EQ(t.Text("SELECT kind || '|' || target || '|' || symbol || '|' || error || '|' || "
                   "build_id FROM attachments WHERE ok = 0"),
            "nccl|/usr/lib/libnccl.so.2|ncclAllReduce|no such symbol|ab12");
  SetLogSink(old);
  std::fclose(log);
}

TEST(AttachLog, VerboseLogsSuccesses) {
  FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  FILE* old = SetLogSink(log);
  AttachLog verbose(nullptr, "n1", /*verbose=*/true);
  verbose.Record("tracepoint", "sched_switch", "", true);
  EXPECT_NE(Captured(log).find("attached tracepoint sched_switch"), std::string::npos);
  EXPECT_EQ(verbose.entries().size(), 1u);
  SetLogSink(old);
  std::fclose(log);
}

}  // namespace
}  // namespace rs::rec
