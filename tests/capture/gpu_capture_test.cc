// The gpu source end to end: the real rankscope-record (--scope netns, in a network namespace
// of this test, so that no other process of the machine is read) against test-bed ranks that
// load rankscope's NCCL profiler plugin (tests/capture/gpu_scenario.cc, libnccl.so.2 of the
// test bed in async mode). Every operation the ranks launched while the recorder read is one
// gpu_ops row that joins exactly one nccl_events call on every rank (a split communicator and
// send/receive included), with the device's times in order; a hang leaves its operations in
// flight with the state they reached.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kernel_test.h"
#include "recorder_runner.h"
#include "rscore/bundle.h"

namespace rs::rec::ktest {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// A network namespace with loopback up, named with our pid; its processes are killed and it
// is removed in the destructor.
class TestNetns {
 public:
  TestNetns() : name_("rs_gpu_" + std::to_string(getpid())) {
    ok_ = Sh("ip netns add " + name_) == 0 && Sh(In("ip link set lo up")) == 0;
  }
  ~TestNetns() {
    Sh("ip netns pids " + name_ + " 2>/dev/null | xargs -r kill -9 2>/dev/null");
    Sh("ip netns del " + name_ + " 2>/dev/null");
  }
  bool ok() const { return ok_; }
  const std::string& name() const { return name_; }
  std::string In(const std::string& cmd) const { return "ip netns exec " + name_ + " " + cmd; }

 private:
  std::string name_;
  bool ok_ = false;
};

// 'key value' lines of the scenario's output.
std::map<std::string, std::string> ReadValues(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    size_t sp = line.find(' ');
    out[line.substr(0, sp)] = sp == std::string::npos ? "" : line.substr(sp + 1);
  }
  return out;
}

std::string ScenarioCommand(const TestNetns& ns, const std::string& args, const std::string& log) {
  return ns.In("env NCCL_PROFILER_PLUGIN=" + Env("CAPTURE_GPU_PLUGIN") +
               " RANKSCOPE_TESTLIB_TIMEOUT_S=60 timeout 120 " + Env("CAPTURE_GPU_SCENARIO") + " " +
               args + " > " + log + " 2>&1");
}

class GpuCapture : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ROOT_OR_SKIP();
    SKIP_UNLESS_OR_FAIL_IN_CI(Sh("command -v ip >/dev/null") == 0,
                              "needs iproute2 (apt-get install iproute2)");
    ASSERT_TRUE(ns_.ok()) << "could not create the test's network namespace";
    bundle_ = dir_.File("gpu.rsb");
    std::vector<std::string> args = {"--out",   bundle_, "--node",     "gpunode",
                                     "--scope", "netns", "--nccl-lib", Env("CAPTURE_NCCL_CPU_LIB")};
    for (const std::string& a : ExtraArgs()) args.push_back(a);
    auto rec = RecorderProcess::Start(args, ns_.name());
    ASSERT_TRUE(rec.ok()) << rec.error().message();
    recorder_.emplace(std::move(rec).value());
    ASSERT_TRUE(recorder_->WaitReady()) << recorder_->stderr_text();
  }
  virtual std::vector<std::string> ExtraArgs() const { return {}; }
  void StopAndOpen() {
    ASSERT_EQ(recorder_->Stop(SIGINT), 0) << recorder_->stderr_text();
    auto opened = rs::OpenRankscopeFile(bundle_);
    ASSERT_TRUE(opened.ok()) << opened.error().message();
    file_.emplace(std::move(opened).value());
  }
  int64_t Int(const std::string& sql) {
    auto v = file_->db().QueryInt(sql);
    EXPECT_TRUE(v.ok()) << sql << ": " << (v.ok() ? "" : v.error().message());
    return v.ok() ? *v : -1;
  }
  std::string Text(const std::string& sql) {
    auto v = file_->db().QueryText(sql);
    EXPECT_TRUE(v.ok()) << sql << ": " << (v.ok() ? "" : v.error().message());
    return v.ok() && *v ? **v : "<null>";
  }
  std::string Meta(const std::string& key) {
    return Text("SELECT value FROM metadata WHERE key = '" + key + "'");
  }

  TestNetns ns_;
  TempDir dir_;
  std::string bundle_;
  std::optional<RecorderProcess> recorder_;
  std::optional<rs::OpenedDb> file_;
};

// A gpu_ops row's call: the same process's nccl_events row of the same communicator, seq, op
// and peer (send/receive count per peer and direction).
constexpr char kCallsOfRow[] =
    "(SELECT COUNT(*) FROM nccl_events e WHERE e.node = g.node AND e.pid = g.pid AND"
    " e.comm_id_hash = g.comm_id_hash AND e.seq = g.seq AND e.op = g.op AND e.peer IS g.peer"
    " AND e.nccl_comm_hash = g.nccl_comm_hash AND e.rank = g.rank AND e.nranks = g.nranks"
    " AND e.ret = 0 AND e.timestamp_ns <= g.timestamp_ns)";
constexpr char kOps[] =
    "('ALL_REDUCE', 'ALL_GATHER', 'REDUCE_SCATTER', 'BROADCAST', 'REDUCE', 'SEND', 'RECV')";

TEST_F(GpuCapture, EveryOperationJoinsItsCallOnEveryRank) {
  constexpr int kRanks = 4;
  const std::string log = dir_.File("ops.log");
  const int rc = Sh(ScenarioCommand(ns_, "ops " + std::to_string(kRanks), log));
  StopAndOpen();
  ASSERT_EQ(rc, 0) << ShOut("cat " + log);
  auto values = ReadValues(log);
  std::string pids;
  int launched = 0;
  for (int r = 0; r < kRanks; ++r) {
    const std::string pid = values["rank" + std::to_string(r) + "_pid"];
    ASSERT_FALSE(pid.empty()) << ShOut("cat " + log);
    pids += (pids.empty() ? "" : ", ") + pid;
    launched += std::stoi(values["rank" + std::to_string(r) + "_ops"]);
    SCOPED_TRACE("rank " + std::to_string(r) + " pid " + pid);
    EXPECT_EQ(Int("SELECT nccl_profiler_api FROM processes WHERE pid = " + pid), 7);
    // Profiler API v7 through the recorder: every collective ran a non-symmetric kernel that
    // reported its phases (no sync phase: 0), untagged; sends and receives report no phases.
    EXPECT_EQ(Text("SELECT group_concat(k, ', ') FROM (SELECT DISTINCT (op IN ('SEND', 'RECV'))"
                   " || ':' || kernel_symmetric || ':' || ifnull(initial_sync_ns, 'null') || ':' ||"
                   " ifnull(user_tag, 'null') AS k FROM gpu_ops WHERE pid = " +
                   pid + " ORDER BY k)"),
              "0:0:0:null, 1:0:null:null");
    EXPECT_EQ(Int("SELECT nccl_rank FROM processes WHERE pid = " + pid), r);
    // Its operations, by kind: the root communicator's and the split child's.
    EXPECT_EQ(Text("SELECT group_concat(op || ' ' || n, ', ') FROM (SELECT op, COUNT(*) AS n"
                   " FROM gpu_ops WHERE pid = " +
                   pid + " GROUP BY op ORDER BY op)"),
              "ALL_GATHER 1, ALL_REDUCE 5, BROADCAST 1, RECV 2, REDUCE 1, REDUCE_SCATTER 1, "
              "SEND 2");  // the warm-up AllReduce too: the plugin's startup window
    EXPECT_EQ(Int("SELECT COUNT(DISTINCT comm_id_hash) FROM gpu_ops WHERE pid = " + pid), 2);
  }
  ASSERT_EQ(launched, kRanks * 12);  // after the warm-up
  launched += kRanks;                // and the warm-ups
  const std::string ranks = " pid IN (" + pids + ")";
  // Every operation launched, once; nothing from other processes.
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops"), launched);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops WHERE" + ranks), launched);
  // Each joins exactly one call of its rank (communicator, seq, op, peer; rank, size and
  // NCCL's communicator hash agree; the call came first).
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops g WHERE comm_id_hash IS NULL OR"
                " nccl_comm_hash IS NULL"),
            0);
  EXPECT_EQ(Int(std::string("SELECT COUNT(*) FROM gpu_ops g WHERE ") + kCallsOfRow + " = 1"),
            launched);
  // Every operation call of the ranks has its row, the warm-ups too: the region was new, so
  // its startup window had the device events on from the communicator's init (without the
  // window, NCCL would have read the mask without them for the first call).
  EXPECT_EQ(
      Int(std::string("SELECT COUNT(*) FROM nccl_events e WHERE op IN ") + kOps + " AND" + ranks +
          " AND NOT EXISTS (SELECT 1 FROM gpu_ops g WHERE g.pid = e.pid AND"
          " g.comm_id_hash = e.comm_id_hash AND g.seq = e.seq AND g.op = e.op AND"
          " g.peer IS e.peer)"),
      0);
  EXPECT_EQ(Int(std::string("SELECT COUNT(*) FROM nccl_events WHERE op = 'ALL_REDUCE' AND seq = 1"
                            " AND comm_id_hash IN (SELECT comm_id_hash FROM nccl_events WHERE"
                            " op = 'COMM_INIT') AND") +
                ranks),
            kRanks);
  EXPECT_EQ(Meta("gpu_ops_unrecorded"), "0");
  // One collective, every member: the same (comm_id_hash, seq) on all ranks of a
  // communicator, the root's (4 ranks) and each child's (2).
  EXPECT_EQ(Int("SELECT COUNT(*) FROM (SELECT comm_id_hash, seq, op, COUNT(DISTINCT pid) AS n,"
                " MIN(nranks) AS lo, MAX(nranks) AS hi FROM gpu_ops WHERE op NOT IN ('SEND',"
                " 'RECV') GROUP BY comm_id_hash, seq, op) WHERE n != lo OR lo != hi"),
            0);
  EXPECT_EQ(Int("SELECT COUNT(DISTINCT comm_id_hash) FROM gpu_ops"), 3);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops WHERE nranks = 2"), kRanks * 4);
  // Send/receive pairs: rank A's n-th send to B is B's n-th receive from A.
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops s WHERE op = 'SEND' AND NOT EXISTS (SELECT 1 FROM"
                " gpu_ops r WHERE r.op = 'RECV' AND r.comm_id_hash = s.comm_id_hash AND"
                " r.seq = s.seq AND r.rank = s.peer AND r.peer = s.rank AND r.bytes = s.bytes)"),
            0);
  // As far as the device got: every one completed, its kernel after its launch.
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops WHERE state = 'completed' AND"
                " timestamp_ns <= device_start_ns AND device_start_ns <= device_end_ns"),
            launched);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops WHERE clock_error_ns < 0"), 0);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops WHERE channels IS NULL OR bytes IS NULL"), 0);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops WHERE op IN ('BROADCAST', 'REDUCE') AND root IS"
                " NULL"),
            0);  // none without its root ...
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops WHERE (op = 'BROADCAST' AND root = 0) OR"
                " (op = 'REDUCE' AND root = 1)"),
            2 * kRanks);  // ... which is the call's
  // NCCL's proxy moved a send's and a receive's bytes over the network, and collectives'.
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops WHERE (op = 'SEND' AND net_bytes_sent != bytes) OR"
                " (op = 'RECV' AND net_bytes_recv != bytes) OR net_bytes_sent + net_bytes_recv"
                " = 0"),
            0);
  // Counts reconcile: rows = events of the source, nothing dropped or left in flight.
  EXPECT_EQ(Text("SELECT method || ' ' || events || ' ' || drops FROM sources WHERE source ="
                 " 'gpu'"),
            "plugin " + std::to_string(launched) + " 0");
  for (const char* key : {"gpu_drops_overrun", "gpu_drops_slots_full", "gpu_drops_late_event",
                          "gpu_drops_undecodable", "gpu_in_flight"}) {
    EXPECT_EQ(Meta(key), "0") << key;
  }
  EXPECT_EQ(Meta("gpu_regions"), std::to_string(kRanks));
  EXPECT_EQ(Int("SELECT COUNT(*) FROM attachments WHERE kind = 'gpu' AND ok = 1"), kRanks);
}

TEST_F(GpuCapture, AHangLeavesItsOperationsInFlightWithTheirState) {
  const std::string log = dir_.File("hang.log");
  ASSERT_EQ(Sh(ScenarioCommand(ns_, "hang", log) + " &"), 0);
  bool hanging = false;
  for (int i = 0; i < 600 && !hanging; ++i) {
    hanging = ReadValues(log).count("hanging") != 0;
    usleep(100'000);
  }
  ASSERT_TRUE(hanging) << ShOut("cat " + log);
  usleep(500'000);  // rank 0's device is inside the third AllReduce now
  StopAndOpen();
  auto values = ReadValues(log);
  const std::string pid0 = values["rank0_pid"], pid1 = values["rank1_pid"];
  ASSERT_FALSE(pid0.empty() || pid1.empty()) << ShOut("cat " + log);
  // seq 1 was the warm-up (recorded: the startup window); 2 ran on both ranks; rank 0's 3
  // started and waits for rank 1, its 4 waits behind it.
  EXPECT_EQ(Text("SELECT group_concat(seq || ' ' || state, ', ') FROM (SELECT seq, state FROM"
                 " gpu_ops WHERE pid = " +
                 pid0 + " ORDER BY seq)"),
            "1 completed, 2 completed, 3 started, 4 enqueued");
  EXPECT_EQ(Text("SELECT group_concat(seq || ' ' || state, ', ') FROM (SELECT seq, state FROM"
                 " gpu_ops WHERE pid = " +
                 pid1 + " ORDER BY seq)"),
            "1 completed, 2 completed");
  // The started operation still in its slot has its device start (converted when its first
  // channel started), no end.
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops WHERE pid = " + pid0 +
                " AND seq = 3 AND device_end_ns IS NULL AND device_start_ns >= timestamp_ns"),
            1);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops WHERE pid = " + pid0 +
                " AND seq = 4 AND device_start_ns IS NULL AND device_end_ns IS NULL"),
            1);
  // The calls returned (enqueued); the operations did not finish: the rows still join them.
  EXPECT_EQ(Int(std::string("SELECT COUNT(*) FROM gpu_ops g WHERE ") + kCallsOfRow + " = 1"), 6);
  EXPECT_EQ(Meta("gpu_in_flight"), "2");
  EXPECT_EQ(Text("SELECT method || ' ' || events || ' ' || drops FROM sources WHERE source ="
                 " 'gpu'"),
            "plugin 6 0");
}

// --nccl-calls setup: only communicator setup and teardown are probed. No per-call rows, and
// still every operation of the plugin joins its communicator (rank, hashes) through the setup
// rows: what the cheaper mode keeps.
class GpuCaptureSetupOnly : public GpuCapture {
 protected:
  std::vector<std::string> ExtraArgs() const override { return {"--nccl-calls", "setup"}; }
};

TEST_F(GpuCaptureSetupOnly, OperationsKeepTheirCommunicatorWithoutPerCallProbes) {
  constexpr int kRanks = 4;
  const std::string log = dir_.File("ops.log");
  const int rc = Sh(ScenarioCommand(ns_, "ops " + std::to_string(kRanks), log));
  StopAndOpen();
  ASSERT_EQ(rc, 0) << ShOut("cat " + log);
  auto values = ReadValues(log);
  int launched = 0;
  for (int r = 0; r < kRanks; ++r)
    launched += std::stoi(values["rank" + std::to_string(r) + "_ops"]);
  ASSERT_EQ(launched, kRanks * 12);
  EXPECT_EQ(Meta("nccl_calls"), "setup");
  EXPECT_EQ(Int(std::string("SELECT COUNT(*) FROM nccl_events WHERE op IN ") + kOps +
                " OR op LIKE 'GROUP%'"),
            0);
  // Setup rows: one root communicator and one split child per rank.
  EXPECT_EQ(Int("SELECT COUNT(*) FROM nccl_events WHERE op IN ('COMM_INIT', 'COMM_SPLIT') AND"
                " ret = 0"),
            2 * kRanks);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops"), launched + kRanks);  // and the warm-ups
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops WHERE comm_id_hash IS NULL OR rank IS NULL"), 0);
  // The root communicator and the two split children, as with every call probed.
  EXPECT_EQ(Int("SELECT COUNT(DISTINCT comm_id_hash) FROM gpu_ops"), 3);
  EXPECT_EQ(Int("SELECT COUNT(DISTINCT comm_id_hash) FROM gpu_ops WHERE nranks = 2"), 2);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM (SELECT comm_id_hash, seq, op, COUNT(DISTINCT pid) AS n,"
                " MIN(nranks) AS lo FROM gpu_ops WHERE op NOT IN ('SEND', 'RECV') GROUP BY"
                " comm_id_hash, seq, op) WHERE n != lo"),
            0);
}

}  // namespace
}  // namespace rs::rec::ktest
