// Rendezvous extraction from small in-memory bundles: which rows become which evidence.
#include "merger/rendezvous.h"

#include <gtest/gtest.h>

#include "rscore/schema.h"

namespace rs::merge {
namespace {

constexpr int64_t kComm = 77;
constexpr int64_t kStream = 0x500, kOtherStream = 0x600;

// A bundle-schema database in memory.
rs::Db Bundle() {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  EXPECT_TRUE(db.ok());
  EXPECT_TRUE(rs::CreateSchema(*db, rs::DbKind::kBundle).ok());
  return std::move(db).value();
}

void Exec(rs::Db& db, const std::string& sql) {
  auto r = db.Exec(sql);
  ASSERT_TRUE(r.ok()) << sql << ": " << r.error().message();
}

// An NCCL call of `pid`: (comm_id_hash, seq) = (kComm, seq), on kStream.
void AddCall(rs::Db& db, int pid, int64_t seq, int64_t entry, int64_t exit,
             const std::string& op = "ALL_REDUCE", int in_group = 0, int ret = 0) {
  static int64_t id = 1;
  Exec(db,
       "INSERT INTO nccl_events(id, node, timestamp_ns, duration_ns, pid, tid, op,"
       " comm_id_hash, seq, stream, in_group, ret) VALUES (" +
           std::to_string(id++) + ", 'n', " + std::to_string(entry) + ", " +
           std::to_string(exit - entry) + ", " + std::to_string(pid) + ", " + std::to_string(pid) +
           ", '" + op + "', " + std::to_string(kComm) + ", " +
           (seq < 0 ? "NULL" : std::to_string(seq)) + ", " + std::to_string(kStream) + ", " +
           std::to_string(in_group) + ", " + std::to_string(ret) + ")");
}

void AddCuda(rs::Db& db, int pid, const std::string& api, int64_t entry, int64_t exit,
             const std::string& stream = "NULL", const std::string& kind = "NULL") {
  static int64_t id = 1'000'000;
  Exec(db,
       "INSERT INTO cuda_events(id, node, timestamp_ns, duration_ns, pid, tid, api, library,"
       " stream, memcpy_kind, ret) VALUES (" +
           std::to_string(id++) + ", 'n', " + std::to_string(entry) + ", " +
           std::to_string(exit - entry) + ", " + std::to_string(pid) + ", " + std::to_string(pid) +
           ", '" + api + "', 'cudart', " + stream + ", " + kind + ", 0)");
}

void AddDevice(rs::Db& db, int pid, int64_t seq, int64_t start, int64_t end,
               const std::string& error = "100", const std::string& state = "completed",
               const std::string& op = "ALL_REDUCE") {
  static int64_t id = 2'000'000;
  Exec(db,
       "INSERT INTO gpu_ops(id, node, timestamp_ns, pid, op, comm_id_hash, seq,"
       " device_start_ns, device_end_ns, clock_error_ns, state) VALUES (" +
           std::to_string(id++) + ", 'n', " + std::to_string(start - 1000) + ", " +
           std::to_string(pid) + ", '" + op + "', " + std::to_string(kComm) + ", " +
           std::to_string(seq) + ", " + std::to_string(start) + ", " + std::to_string(end) + ", " +
           error + ", '" + state + "')");
}

// Reads each db as its own input (as validation does), then all together (as the merge does).
std::vector<Rendezvous> Collect(std::vector<rs::Db>& dbs, RendezvousSummary* summary) {
  RendezvousCollector all;
  for (size_t i = 0; i < dbs.size(); ++i) {
    RendezvousCollector one;
    auto r = one.AddNode(dbs[i], 0);
    EXPECT_TRUE(r.ok()) << r.error().message();
    all.Absorb(std::move(one), static_cast<int>(i));
  }
  std::vector<Rendezvous> out = all.Take();
  *summary = all.summary();
  return out;
}

const NodeObservation* Of(const Rendezvous& r, int node) {
  for (const NodeObservation& o : r.nodes) {
    if (o.node == node) return &o;
  }
  return nullptr;
}

TEST(RendezvousCollector, EnqueuesWithTheStepsLossCopyAreSyncAfterEvidence) {
  // Two nodes, two ranks each, clocks apart by 1 ms. Every call returns 5 us after it entered,
  // before the node's other rank entered; the loss copy returns after the collective's end.
  std::vector<rs::Db> dbs;
  dbs.push_back(Bundle());
  dbs.push_back(Bundle());
  for (int n = 0; n < 2; ++n) {
    const int64_t off = n * 1'000'000;
    for (int l = 0; l < 2; ++l) {
      const int pid = 100 * n + l;
      for (int64_t seq = 0; seq < 10; ++seq) {
        const int64_t t = 10'000'000 * (seq + 1) + off;
        const int64_t entry = t + 100'000 * l + 10'000 * n;
        AddCall(dbs[n], pid, seq, entry, entry + 5'000);
        // Entered right after the call returned, but neither waits for the collective: a
        // device-to-device copy and a sync of another stream.
        AddCuda(dbs[n], pid, "cudaMemcpy", entry + 6'000, entry + 7'000, "NULL", "3");
        AddCuda(dbs[n], pid, "cudaStreamSynchronize", entry + 8'000, entry + 9'000,
                std::to_string(kOtherStream));
        if (l == 1) {  // the step's loss copy (after both ranks' calls of this node)
          for (int k = 0; k < 2; ++k) {
            AddCuda(dbs[n], 100 * n + k, "cudaMemcpy", t + 300'000, t + 2'000'000 + 1000 * k,
                    "NULL", "2");
          }
        }
      }
    }
  }
  RendezvousSummary summary;
  std::vector<Rendezvous> rz = Collect(dbs, &summary);
  ASSERT_EQ(summary.communicators.size(), 1u);
  EXPECT_EQ(summary.communicators[0].decision.mode, CallMode::kEnqueue);
  EXPECT_EQ(summary.communicators[0].evidence.same_node_checked, 20);
  EXPECT_EQ(summary.communicators[0].evidence.same_node_early_exits, 20);
  ASSERT_EQ(rz.size(), 10u);
  for (const Rendezvous& r : rz) {
    for (int n = 0; n < 2; ++n) {
      const NodeObservation* o = Of(r, n);
      ASSERT_TRUE(o);
      EXPECT_EQ(o->evidence, Evidence::kSyncAfter);
      // The exits are the loss copy's, never a call's own (entry + 5 us).
      EXPECT_EQ((o->min_exit_ns - n * 1'000'000) % 10'000'000, 2'000'000);
      EXPECT_EQ((o->max_entry_ns - n * 1'000'000) % 10'000'000, 100'000 + 10'000 * n);
    }
  }
  EXPECT_EQ(summary.by_evidence[static_cast<int>(Evidence::kSyncAfter)], 20);
  EXPECT_EQ(summary.by_evidence[static_cast<int>(Evidence::kBlockingCall)], 0);
}

TEST(RendezvousCollector, BlockingCallsAreTheirOwnEvidence) {
  std::vector<rs::Db> dbs;
  dbs.push_back(Bundle());
  dbs.push_back(Bundle());
  for (int n = 0; n < 2; ++n) {
    for (int l = 0; l < 2; ++l) {
      const int pid = 100 * n + l;
      AddCuda(dbs[n], pid, "cudaLaunchKernel", 1, 2);  // CUDA calls do not matter here
      for (int64_t seq = 0; seq < 5; ++seq) {
        const int64_t t = 10'000'000 * (seq + 1);
        AddCall(dbs[n], pid, seq, t + 1000 * l, t + 500'000 + 10 * l);
      }
      AddCall(dbs[n], pid, -1, 10, 90'000, "COMM_INIT");
      // Neither a grouped call nor a failed one counts.
      AddCall(dbs[n], pid, 50, 0, 10, "ALL_REDUCE", /*in_group=*/1);
      AddCall(dbs[n], pid, 51, 0, 10, "ALL_REDUCE", 0, /*ret=*/2);
    }
  }
  RendezvousSummary summary;
  std::vector<Rendezvous> rz = Collect(dbs, &summary);
  ASSERT_EQ(summary.communicators.size(), 1u);
  EXPECT_EQ(summary.communicators[0].decision.mode, CallMode::kBlocking);
  ASSERT_EQ(rz.size(), 6u);  // 5 collectives + the init
  int inits = 0;
  for (const Rendezvous& r : rz) {
    const NodeObservation* o = Of(r, 1);
    ASSERT_TRUE(o);
    inits += o->evidence == Evidence::kCommInit;
    if (o->evidence == Evidence::kBlockingCall) {
      EXPECT_EQ(o->min_exit_ns % 10'000'000, 500'000);
      EXPECT_EQ(o->max_entry_ns % 10'000'000, 1000);
    }
  }
  EXPECT_EQ(inits, 1);
}

TEST(RendezvousCollector, OneRankPerNodeDecidedByTheProcessesCudaCalls) {
  // Node 0's process made CUDA calls: its calls are taken as enqueues (its sync after them is
  // the evidence); node 1's made none: its calls are taken as blocking.
  std::vector<rs::Db> dbs;
  dbs.push_back(Bundle());
  dbs.push_back(Bundle());
  for (int64_t seq = 0; seq < 4; ++seq) {
    const int64_t t = 10'000'000 * (seq + 1);
    AddCall(dbs[0], 1, seq, t, t + 400'000);
    AddCuda(dbs[0], 1, "cudaDeviceSynchronize", t + 400'100, t + 450'000);
    AddCall(dbs[1], 2, seq, t + 100, t + 400'000);
  }
  RendezvousSummary summary;
  std::vector<Rendezvous> rz = Collect(dbs, &summary);
  ASSERT_EQ(summary.communicators.size(), 1u);
  EXPECT_EQ(summary.communicators[0].decision.mode, CallMode::kByProcess);
  ASSERT_EQ(rz.size(), 4u);
  for (const Rendezvous& r : rz) {
    ASSERT_TRUE(Of(r, 0) && Of(r, 1));
    EXPECT_EQ(Of(r, 0)->evidence, Evidence::kSyncAfter);
    EXPECT_EQ(Of(r, 0)->min_exit_ns % 10'000'000, 450'000);
    EXPECT_EQ(Of(r, 1)->evidence, Evidence::kBlockingCall);
  }
}

TEST(RendezvousCollector, CompletedDeviceTimesOfCollectivesAreDeviceEvidence) {
  std::vector<rs::Db> dbs;
  dbs.push_back(Bundle());
  dbs.push_back(Bundle());
  for (int n = 0; n < 2; ++n) {
    AddCuda(dbs[n], n, "cudaLaunchKernel", 1, 2);
    for (int64_t seq = 0; seq < 3; ++seq) {
      const int64_t t = 10'000'000 * (seq + 1);
      AddCall(dbs[n], n, seq, t, t + 5'000);
      AddDevice(dbs[n], n, seq, t + 3'000'000, t + 4'000'000 + n);
    }
    AddDevice(dbs[n], n, 3, 50'000'000, 51'000'000, "100", "started");  // not finished
    AddDevice(dbs[n], n, 4, 60'000'000, 61'000'000, "100", "completed", "BROADCAST");
  }
  RendezvousSummary summary;
  std::vector<Rendezvous> rz = Collect(dbs, &summary);
  ASSERT_EQ(rz.size(), 3u);
  for (const Rendezvous& r : rz) {
    const NodeObservation* o = Of(r, 1);
    ASSERT_TRUE(o);
    EXPECT_EQ(o->evidence, Evidence::kDevice);
    EXPECT_EQ(o->max_entry_ns % 10'000'000, 3'000'000 - 100);
    EXPECT_EQ(o->min_exit_ns % 10'000'000, 4'000'001);
  }
  // A bundle of an earlier recorder has no gpu_ops table: its calls are read all the same, and
  // the other node's device times show that the communicator's calls return before their device
  // starts them: enqueues, which alone bound nothing.
  Exec(dbs[1], "DROP TABLE gpu_ops");
  rz = Collect(dbs, &summary);
  EXPECT_EQ(summary.communicators[0].decision.mode, CallMode::kEnqueue);
  EXPECT_EQ(summary.communicators[0].evidence.device_calls, 3);
  EXPECT_EQ(summary.communicators[0].evidence.returned_before_device, 3);
  EXPECT_EQ(rz.size(), 0u);
  // Without any device times, its processes' CUDA calls make them enqueues all the same.
  Exec(dbs[0], "DROP TABLE gpu_ops");
  rz = Collect(dbs, &summary);
  EXPECT_EQ(summary.communicators[0].decision.mode, CallMode::kByProcess);
  EXPECT_EQ(rz.size(), 0u);
}

TEST(RendezvousCollector, DeviceTimesOfAnUnrecordedCommunicatorMatchByNcclsOwnIds) {
  // The recorder started after the communicator's init: no comm_id_hash, no seq, no NCCL
  // calls of it; the plugin's rows still carry NCCL's commHash and seqNumber (per op).
  std::vector<rs::Db> dbs;
  dbs.push_back(Bundle());
  dbs.push_back(Bundle());
  for (int n = 0; n < 2; ++n) {
    for (int64_t s = 0; s < 3; ++s) {
      for (const char* op : {"ALL_REDUCE", "ALL_GATHER"}) {
        Exec(dbs[n],
             "INSERT INTO gpu_ops(node, timestamp_ns, pid, op, nccl_comm_hash, nccl_seq,"
             " device_start_ns, device_end_ns, clock_error_ns, state) VALUES ('n', 0, 1, '" +
                 std::string(op) + "', 555, " + std::to_string(s) + ", " +
                 std::to_string(1000 * s + 10 * n) + ", " + std::to_string(1000 * s + 500) +
                 ", 0, 'completed')");
      }
    }
  }
  RendezvousSummary summary;
  std::vector<Rendezvous> rz = Collect(dbs, &summary);
  EXPECT_TRUE(summary.communicators.empty());  // no calls to judge
  ASSERT_EQ(rz.size(), 6u);                    // 3 seqNumbers of each op
  for (const Rendezvous& r : rz) {
    ASSERT_TRUE(Of(r, 0) && Of(r, 1));
    EXPECT_EQ(Of(r, 1)->evidence, Evidence::kDevice);
    EXPECT_EQ(Of(r, 1)->max_entry_ns - Of(r, 0)->max_entry_ns, 10);
    EXPECT_EQ(Of(r, 1)->min_exit_ns, Of(r, 0)->min_exit_ns);
  }
}

TEST(RendezvousCollector, GraphReplaysPairByReplayNumberAndOnlyWhereTheyReplayOneCall) {
  // Two nodes replay a captured all-reduce (call 7) 3 times; their rows have no seq of their
  // own. The replays pair by their number, not with the captured call nor with each other. A
  // third replay number names another captured call on node 1 (its replays were counted from
  // another point): not paired.
  std::vector<rs::Db> dbs;
  dbs.push_back(Bundle());
  dbs.push_back(Bundle());
  for (int n = 0; n < 2; ++n) {
    for (int64_t r = 1; r <= 4; ++r) {
      const int64_t call = r == 4 && n == 1 ? 8 : 7;
      Exec(dbs[n],
           "INSERT INTO gpu_ops(node, timestamp_ns, pid, op, comm_id_hash, nccl_comm_hash,"
           " nccl_seq, graph_call_seq, graph_replay_seq, device_start_ns, device_end_ns,"
           " clock_error_ns, state) VALUES ('n', 0, 1, 'ALL_REDUCE', 42, 555, " +
               std::to_string(r) + ", " + std::to_string(call) + ", " + std::to_string(r) + ", " +
               std::to_string(1000 * r + 10 * n) + ", " + std::to_string(1000 * r + 500) +
               ", 0, 'completed')");
    }
  }
  RendezvousSummary summary;
  std::vector<Rendezvous> rz = Collect(dbs, &summary);
  ASSERT_EQ(rz.size(), 3u);
  for (const Rendezvous& r : rz) {
    ASSERT_TRUE(Of(r, 0) && Of(r, 1));
    EXPECT_EQ(Of(r, 1)->max_entry_ns - Of(r, 0)->max_entry_ns, 10);
  }
}

TEST(RendezvousCollector, AnObservationThatContradictsItselfIsDropped) {
  // cudaEventSynchronize on an event recorded before the collective (an assumption the
  // recording cannot check) returns before another rank of the node even enqueued.
  std::vector<rs::Db> dbs;
  dbs.push_back(Bundle());
  dbs.push_back(Bundle());
  for (int n = 0; n < 2; ++n) {
    for (int l = 0; l < 2; ++l) {
      const int pid = 10 * n + l;
      AddCall(dbs[n], pid, 0, 1000 + 500'000 * l, 2000 + 500'000 * l);
      AddCuda(dbs[n], pid, "cudaEventSynchronize", 3000 + 500'000 * l,
              (n == 0 ? 4000 : 900'000) + 500'000 * l);
    }
  }
  RendezvousSummary summary;
  std::vector<Rendezvous> rz = Collect(dbs, &summary);
  EXPECT_EQ(summary.dropped, 1);  // node 0's
  EXPECT_EQ(rz.size(), 0u);
}

}  // namespace
}  // namespace rs::merge
