#include "recorder/process_probe.h"

#include <gtest/gtest.h>

#include <cstring>

#include "recorder/test_db.h"

namespace rs::rec {
namespace {

using testing::Bytes;
using testing::TestDb;

TEST(ExitCodeFromWaitStatus, NormalExitAndSignals) {
  EXPECT_EQ(ExitCodeFromWaitStatus(0), 0);
  EXPECT_EQ(ExitCodeFromWaitStatus(3 << 8), 3);
  EXPECT_EQ(ExitCodeFromWaitStatus(9), 137);     // SIGKILL
  EXPECT_EQ(ExitCodeFromWaitStatus(0x8b), 139);  // SIGSEGV with core dump bit
}

TEST(ProcessEventWriter, DecodesExecAndExit) {
  TestDb t;
  auto w = ProcessEventWriter::Create(t.db, "n1", &t.ids, &t.clock);
  ASSERT_TRUE(w.ok());
  rs_process_event e{};
  e.ts_ns = 1'300'000'000'000;
  e.kind = RS_PROCESS_EXEC;
  e.pid = 77;
  e.ppid = 1;
  std::strcpy(e.comm, "trainer");
  std::strcpy(e.filename, "/usr/bin/trainer");
  auto r = w->Write(Bytes(e));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->pid, 77u);
  e.kind = RS_PROCESS_EXIT;
  e.exit_code = 2 << 8;
  ASSERT_TRUE(w->Write(Bytes(e)).ok());

  EXPECT_EQ(t.Text("SELECT event || ' ' || pid || ' ' || ppid || ' ' || comm || ' ' || filename "
                   "FROM process_events WHERE event = 'exec'"),
            "exec 77 1 trainer /usr/bin/trainer");
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM process_events WHERE event = 'exec' AND exit_code IS "
                  "NULL"),
            1);
  EXPECT_EQ(t.Int("SELECT exit_code FROM process_events WHERE event = 'exit'"), 2);
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM process_events WHERE event = 'exit' AND filename IS "
                  "NULL"),
            1);
  EXPECT_EQ(t.Int("SELECT timestamp_ns FROM process_events LIMIT 1"),
            TestDb::kOffset + 1'300'000'000'000);
  e.kind = 9;
  EXPECT_FALSE(w->Write(Bytes(e)).ok());
}

}  // namespace
}  // namespace rs::rec
