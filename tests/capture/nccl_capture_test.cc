// NCCL capture on the test bed's libnccl.so.2 (tests/cluster): every decoded column against
// the arguments the driver passed, comm_id_hash recomputed here from the known unique id,
// sequence numbers across communicators and splits, and a hang's in-flight call.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "capture_session.h"
#include "kernel_test.h"
#include "recorder/nccl_probe.h"
#include "rscore/comm_hash.h"
#include "rscore/nccl_comm_hash.h"

namespace {

using capture_test::Child;
using capture_test::Int;
using capture_test::Row;
using capture_test::Rows;
using capture_test::S64;
using capture_test::Session;
using capture_test::Text;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

uint64_t KnownIdHash(int seed) {
  unsigned char id[128];
  for (int i = 0; i < 128; ++i) id[i] = static_cast<unsigned char>(seed * 31 + i * 7);
  return rs::CommIdHash(id);
}

uint64_t KnownIdNcclHash(int seed) {
  unsigned char id[128];
  for (int i = 0; i < 128; ++i) id[i] = static_cast<unsigned char>(seed * 31 + i * 7);
  return rs::NcclCommHash(id);
}

rs::rec::RecorderOptions TestLibOptions() {
  rs::rec::RecorderOptions opts;
  opts.nccl_libs = {Env("CAPTURE_NCCL_CPU_LIB")};
  return opts;
}

std::vector<Row> NcclRows(Session& s, pid_t pid) {
  return Rows(s.db(), "SELECT * FROM nccl_events WHERE pid = " + std::to_string(pid) +
                          " ORDER BY timestamp_ns, id");
}

bool Attached(Session& s, const std::string& lib, const std::string& symbol) {
  for (const auto& a : s.log().entries()) {
    if (a.ok && a.target == lib && a.symbol == symbol) return true;
  }
  return false;
}

// Recorded with --pid (only the driver; other processes using the library are not).
TEST(NcclCapture, EveryColumnOnTheTestLibrary) {
  REQUIRE_ROOT_OR_SKIP();
  Child child({Env("CAPTURE_NCCL_SCENARIO"), "local"});
  rs::rec::RecorderOptions opts = TestLibOptions();
  opts.pids = {child.pid()};
  Session s(opts);
  rs::rec::NcclProbe probe;
  int64_t start = capture_test::WallNs();
  ASSERT_TRUE(s.Start(probe).ok());
  ASSERT_TRUE(Attached(s, opts.nccl_libs[0], "ncclAllReduce"));
  child.Write("go\n");
  ASSERT_TRUE(child.ReadUntil("done"));
  s.Tick(probe);  // drain while the process still runs (its maps symbolize the callers)
  child.Write("exit\n");
  const pid_t driver = child.pid();
  ASSERT_EQ(child.Wait(), 0);
  auto finished = s.Finish(probe);
  ASSERT_TRUE(finished.ok()) << finished.error().message();
  int64_t end = capture_test::WallNs();

  auto all = Rows(s.db(), "SELECT * FROM nccl_events ORDER BY timestamp_ns, id");
  ASSERT_FALSE(all.empty());
  const int64_t cpid = driver;
  EXPECT_EQ(Int(all[0], "pid"), cpid);
  auto rows = NcclRows(s, static_cast<pid_t>(cpid));
  ASSERT_EQ(rows.size(), all.size()) << "rows from a process not selected with --pid";
  std::vector<std::string> ops;
  for (const Row& r : rows) ops.push_back(*Text(r, "op"));
  const std::vector<std::string> expected_ops = {
      "COMM_INIT",  "COMM_INIT",  "ALL_REDUCE",  "ALL_REDUCE",     "ALL_GATHER",  "ALL_REDUCE",
      "BROADCAST",  "BROADCAST",  "REDUCE",      "REDUCE_SCATTER", "GROUP_START", "SEND",
      "RECV",       "SEND",       "GROUP_END",   "COMM_SPLIT",     "ALL_REDUCE",  "COMM_SPLIT",
      "ALL_REDUCE", "ALL_REDUCE", "COMM_DESTROY"};
  ASSERT_EQ(ops, expected_ops);
  EXPECT_EQ(probe.events(), rows.size());  // counts reconcile: every event became a row
  EXPECT_EQ(probe.drops(), 0u);

  const int64_t c1 = S64(child.Hex("c1")), c2 = S64(child.Hex("c2"));
  const int64_t c3 = S64(child.Hex("c3")), c4 = S64(child.Hex("c4"));
  const int64_t h1 = S64(KnownIdHash(1)), h2 = S64(KnownIdHash(2));

  // Every column of the first AllReduce.
  const Row& ar = rows[2];
  EXPECT_EQ(Text(ar, "node"), "capnode");
  EXPECT_GE(*Int(ar, "timestamp_ns"), start);
  EXPECT_LE(*Int(ar, "timestamp_ns"), end);
  ASSERT_TRUE(Int(ar, "duration_ns"));
  EXPECT_GE(*Int(ar, "duration_ns"), 0);
  EXPECT_LT(*Int(ar, "duration_ns"), end - start);
  EXPECT_EQ(Int(ar, "tid"), cpid);  // the driver's main thread
  EXPECT_EQ(Int(ar, "rank"), 3);
  EXPECT_EQ(Int(ar, "nranks"), 4);
  EXPECT_EQ(Int(ar, "comm_id_hash"), h1);
  EXPECT_EQ(Int(ar, "nccl_comm_hash"), S64(KnownIdNcclHash(1)));
  EXPECT_EQ(Int(ar, "comm"), c1);
  EXPECT_EQ(Int(ar, "seq"), 1);
  EXPECT_EQ(Int(ar, "count"), 1000);
  EXPECT_EQ(Text(ar, "datatype"), "float32");
  EXPECT_EQ(Text(ar, "reduce_op"), "avg");
  EXPECT_EQ(Int(ar, "bytes"), 4000);
  EXPECT_FALSE(Int(ar, "peer"));
  EXPECT_FALSE(Int(ar, "root"));
  EXPECT_EQ(Int(ar, "stream"), 0x5151);
  EXPECT_EQ(Int(ar, "ret"), 0);
  EXPECT_EQ(Int(ar, "in_group"), 0);
  EXPECT_EQ(Text(ar, "state"), "complete");
  EXPECT_EQ(rs::EventIdRecordingKey(*Int(ar, "id")), 0x1234u);
  // Its caller, symbolized in the driver.
  ASSERT_TRUE(Int(ar, "stack_id"));
  auto frames = s.db().QueryText("SELECT frames FROM stacks WHERE id = " +
                                 std::to_string(*Int(ar, "stack_id")));
  ASSERT_TRUE(frames.ok() && *frames);
  EXPECT_NE((*frames)->find("Local"), std::string::npos) << **frames;
  EXPECT_NE((*frames)->find("/nccl_scenario@"), std::string::npos) << **frames;

  // Communicator creation: rank from the register, hash of the id passed on the stack.
  EXPECT_EQ(Int(rows[0], "rank"), 3);
  EXPECT_EQ(Int(rows[0], "nranks"), 4);
  EXPECT_EQ(Int(rows[0], "comm_id_hash"), h1);
  EXPECT_EQ(Int(rows[0], "comm"), c1);
  EXPECT_EQ(Int(rows[1], "rank"), 1);
  EXPECT_EQ(Int(rows[1], "comm_id_hash"), h2);
  EXPECT_EQ(Int(rows[1], "nccl_comm_hash"), S64(KnownIdNcclHash(2)));
  EXPECT_EQ(Int(rows[1], "comm"), c2);

  // Sequence numbers per communicator.
  EXPECT_EQ(Int(rows[3], "seq"), 2);
  const Row& ag = rows[4];
  EXPECT_EQ(Int(ag, "comm"), c2);
  EXPECT_EQ(Int(ag, "seq"), 1);
  EXPECT_EQ(Int(ag, "rank"), 1);
  EXPECT_EQ(Int(ag, "nranks"), 2);
  EXPECT_EQ(Int(ag, "comm_id_hash"), h2);
  EXPECT_EQ(Text(ag, "datatype"), "int64");
  EXPECT_EQ(Int(ag, "bytes"), 80);
  EXPECT_EQ(Int(ag, "stream"), 0x6161);
  EXPECT_FALSE(Text(ag, "reduce_op"));
  EXPECT_EQ(Int(rows[5], "seq"), 3);
  EXPECT_EQ(Text(rows[5], "reduce_op"), "max");
  EXPECT_EQ(Text(rows[5], "datatype"), "int32");
  // ncclBroadcast (root in r8, stream at [sp+8]) and ncclBcast (root in rcx, stream in r9):
  // one row each, although ncclBcast may call ncclBroadcast.
  EXPECT_EQ(Int(rows[6], "root"), 2);
  EXPECT_EQ(Int(rows[6], "stream"), 0x5252);
  EXPECT_EQ(Text(rows[6], "datatype"), "uint8");
  EXPECT_EQ(Int(rows[6], "seq"), 4);
  EXPECT_EQ(Int(rows[7], "root"), 1);
  EXPECT_EQ(Int(rows[7], "count"), 6);
  EXPECT_EQ(Int(rows[7], "bytes"), 48);
  EXPECT_EQ(Int(rows[7], "stream"), 0x5353);
  EXPECT_EQ(Int(rows[7], "seq"), 5);
  // ncclReduce: 8 arguments, comm and stream on the stack.
  EXPECT_EQ(Int(rows[8], "comm"), c1);
  EXPECT_EQ(Int(rows[8], "root"), 0);
  EXPECT_EQ(Text(rows[8], "reduce_op"), "min");
  EXPECT_EQ(Int(rows[8], "stream"), 0x5454);
  EXPECT_EQ(Int(rows[8], "seq"), 6);
  EXPECT_EQ(Int(rows[9], "count"), 8);
  EXPECT_EQ(Text(rows[9], "datatype"), "uint32");
  EXPECT_EQ(Text(rows[9], "reduce_op"), "prod");
  EXPECT_EQ(Int(rows[9], "stream"), 0x5555);
  EXPECT_EQ(Int(rows[9], "seq"), 7);

  // The group: per-peer p2p sequences, in_group set inside.
  EXPECT_EQ(Int(rows[10], "in_group"), 0);
  for (int i : {11, 12, 13}) {
    EXPECT_EQ(Int(rows[i], "in_group"), 1);
    EXPECT_EQ(Int(rows[i], "peer"), 1);
    EXPECT_EQ(Int(rows[i], "count"), 9);
    EXPECT_EQ(Text(rows[i], "datatype"), "int8");
    EXPECT_EQ(Int(rows[i], "stream"), 0x5656);
    EXPECT_EQ(Int(rows[i], "rank"), 3);
  }
  EXPECT_EQ(Int(rows[11], "seq"), 1);
  EXPECT_EQ(Int(rows[12], "seq"), 1);
  EXPECT_EQ(Int(rows[13], "seq"), 2);
  EXPECT_EQ(Int(rows[14], "in_group"), 0);

  // Splits: the split row is the parent's; children get the split hash.
  EXPECT_EQ(Int(rows[15], "comm"), c1);
  EXPECT_EQ(Int(rows[15], "comm_id_hash"), h1);
  const Row& on_c3 = rows[16];
  EXPECT_EQ(Int(on_c3, "comm"), c3);
  EXPECT_EQ(Int(on_c3, "comm_id_hash"), S64(rs::SplitCommIdHash(KnownIdHash(1), 5, 0)));
  EXPECT_EQ(Int(on_c3, "nccl_comm_hash"), S64(rs::NcclSplitCommHash(KnownIdNcclHash(1), 1, 5)));
  EXPECT_EQ(Int(on_c3, "rank"), child.Int("c3_rank"));  // told by ncclCommUserRank
  EXPECT_EQ(Int(on_c3, "nranks"), child.Int("c3_nranks"));
  EXPECT_EQ(Int(on_c3, "seq"), 1);
  const Row& on_c4 = rows[18];
  EXPECT_EQ(Int(on_c4, "comm"), c4);
  EXPECT_EQ(Int(on_c4, "comm_id_hash"), S64(rs::SplitCommIdHash(KnownIdHash(1), 7, 1)));
  EXPECT_EQ(Int(on_c4, "nccl_comm_hash"), S64(rs::NcclSplitCommHash(KnownIdNcclHash(1), 2, 7)));
  EXPECT_FALSE(Int(on_c4, "rank"));  // never asked: unknown, not guessed
  EXPECT_FALSE(Int(on_c4, "nranks"));
  EXPECT_EQ(Int(on_c4, "seq"), 1);

  // A NULL communicator: the library's error, no sequence number.
  EXPECT_EQ(Int(rows[19], "ret"), child.Int("null_comm_ret"));
  EXPECT_EQ(Int(rows[19], "ret"), 4);
  EXPECT_EQ(Int(rows[19], "comm"), 0);
  EXPECT_FALSE(Int(rows[19], "nccl_comm_hash"));
  EXPECT_FALSE(Int(rows[19], "seq"));
  EXPECT_EQ(Int(rows[20], "comm"), c2);
  EXPECT_EQ(Int(rows[20], "rank"), 1);

  // The process is traced with the rank of its first communicator.
  auto proc = Rows(s.db(), "SELECT * FROM processes WHERE pid = " + std::to_string(cpid));
  ASSERT_EQ(proc.size(), 1u);
  EXPECT_EQ(Int(proc[0], "nccl_rank"), 3);
  EXPECT_EQ(Int(proc[0], "nccl_nranks"), 4);
  // Attachments: the library's functions, each once.
  EXPECT_EQ(*s.db().QueryInt("SELECT COUNT(*) FROM attachments WHERE kind = 'nccl' AND ok = 1"
                             " AND symbol = 'ncclAllReduce' AND build_id IS NOT NULL"),
            1);
  auto unknown = s.db().QueryText("SELECT value FROM metadata WHERE key = 'nccl_unknown_comms'");
  ASSERT_TRUE(unknown.ok() && *unknown);
  EXPECT_EQ(**unknown, "0");
}

// Both ways of attaching: uprobe_multi links (Linux 6.6+) and one perf-event uprobe per
// function (older kernels).
class NcclHang : public ::testing::TestWithParam<bool> {};

TEST_P(NcclHang, IsRecordedInFlightAndRanksAgreeOnTheCollective) {
  REQUIRE_ROOT_OR_SKIP();
  Session s(TestLibOptions());
  rs::rec::NcclProbe probe;
  const bool multi = GetParam();
  if (!multi) probe.DisableUprobeMulti();
  ASSERT_TRUE(s.Start(probe).ok());
  if (multi) {
    SKIP_UNLESS_OR_FAIL_IN_CI(probe.method() == "uprobe_multi",
                              "this kernel has no uprobe_multi links (Linux < 6.6)");
  } else {
    EXPECT_EQ(probe.method(), "uprobe");
  }
  const std::string port = std::to_string(20000 + getpid() % 20000);
  Child child({Env("CAPTURE_NCCL_SCENARIO"), "hang"},
              {{"NCCL_COMM_ID", "127.0.0.1:" + port}, {"RANKSCOPE_TESTLIB_TIMEOUT_S", "60"}});
  ASSERT_TRUE(child.ReadUntil("hanging", 20000));
  ASSERT_TRUE(child.ReadUntil("rank1_pid", 5000));
  const int64_t pid0 = child.Int("rank0_pid"), pid1 = child.Int("rank1_pid");
  usleep(300 * 1000);  // rank 0 is inside its second AllReduce now
  s.Tick(probe);
  auto finished = s.Finish(probe);
  kill(static_cast<pid_t>(pid1), SIGKILL);
  child.Kill();
  ASSERT_TRUE(finished.ok()) << finished.error().message();

  auto r0 = NcclRows(s, static_cast<pid_t>(pid0));
  auto r1 = NcclRows(s, static_cast<pid_t>(pid1));
  ASSERT_EQ(r0.size(), 3u);
  ASSERT_EQ(r1.size(), 2u);
  EXPECT_EQ(Text(r0[0], "op"), "COMM_INIT");
  EXPECT_EQ(Int(r0[0], "rank"), 0);
  EXPECT_EQ(Int(r1[0], "rank"), 1);
  EXPECT_EQ(Int(r0[0], "nranks"), 2);
  ASSERT_TRUE(Int(r0[0], "comm_id_hash"));
  EXPECT_EQ(Int(r0[0], "comm_id_hash"), Int(r1[0], "comm_id_hash"));
  // The first AllReduce: the same (comm_id_hash, seq) on both ranks.
  for (const auto* r : {&r0[1], &r1[1]}) {
    EXPECT_EQ(Text(*r, "op"), "ALL_REDUCE");
    EXPECT_EQ(Int(*r, "seq"), 1);
    EXPECT_EQ(Int(*r, "comm_id_hash"), Int(r0[0], "comm_id_hash"));
    EXPECT_EQ(Text(*r, "state"), "complete");
    EXPECT_EQ(Int(*r, "ret"), 0);
  }
  EXPECT_EQ(Int(r0[1], "comm"), S64(child.Hex("rank0_comm")));
  EXPECT_EQ(Int(r1[1], "comm"), S64(child.Hex("rank1_comm")));
  // The second: entered by rank 0 only, never returned.
  const Row& hung = r0[2];
  EXPECT_EQ(Text(hung, "op"), "ALL_REDUCE");
  EXPECT_EQ(Text(hung, "state"), "in_flight");
  EXPECT_FALSE(Int(hung, "duration_ns"));
  EXPECT_FALSE(Int(hung, "ret"));
  EXPECT_EQ(Int(hung, "seq"), 2);
  EXPECT_EQ(Int(hung, "rank"), 0);
  EXPECT_EQ(Int(hung, "count"), 256);
  EXPECT_EQ(Int(hung, "comm_id_hash"), Int(r0[0], "comm_id_hash"));
  // Nothing else of these two processes is in flight (rank 1 waits outside NCCL).
  EXPECT_EQ(
      *s.db().QueryInt("SELECT COUNT(*) FROM nccl_events WHERE state = 'in_flight' AND pid IN (" +
                       std::to_string(pid0) + ", " + std::to_string(pid1) + ")"),
      1);
  auto in_flight = s.db().QueryText("SELECT value FROM metadata WHERE key = 'nccl_in_flight'");
  ASSERT_TRUE(in_flight.ok() && *in_flight);
  EXPECT_GE(std::stoi(**in_flight), 1);
}

INSTANTIATE_TEST_SUITE_P(Attach, NcclHang, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "UprobeMulti" : "PerfEvent"; });

}  // namespace
