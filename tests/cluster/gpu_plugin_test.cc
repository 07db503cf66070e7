// rankscope's NCCL profiler plugin loaded by the test bed's NCCL library (which calls it as
// NCCL 2.28 does) in ranks that are processes of their own: how it is found, every field of
// its records for each collective, send/receive and a grouped call, a split communicator, the
// device clock (set kDeviceOffset ahead of the host's, RANKSCOPE_CUDA_CPU_CLOCK) and the
// network bytes the test bed's transport moved. Each rank reads its own region as the
// recorder would (gpu_plugin_ranks.h); this process compares the ranks.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "child_check.h"
#include "cuda_runtime_api.h"
#include "gpu_plugin_ranks.h"
#include "nccl.h"
#include "rscore/nccl_comm_hash.h"
#include "test_ranks.h"

namespace rs_testbed {
namespace {

constexpr int kRanks = 3;

// The plugin's file is mapped in this process.
bool PluginMapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libnccl-profiler-rankscope.so") != std::string::npos) return true;
  }
  return false;
}

// A fresh process with NCCL_PROFILER_PLUGIN = setting (unset if null) initializes a
// communicator; 1 if the plugin was loaded and made its region, 0 if not.
int ChildFindsPlugin(const char* setting) {
  pid_t pid = fork();
  if (pid == 0) {
    if (setting != nullptr) {
      setenv("NCCL_PROFILER_PLUGIN", setting, 1);
    } else {
      unsetenv("NCCL_PROFILER_PLUGIN");
    }
    setenv("RANKSCOPE_TESTLIB_NO_PEERS", "1", 1);
    ncclUniqueId id{};
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, 2, id, 1) != ncclSuccess) _exit(2);
    std::optional<rs::rec::GpuRingReader> ring = OpenOwnRing();
    const bool loaded = PluginMapped() && ring && ring->header().api_version == 7 &&
                        ring->header().comms == 1 && ring->header().pid == getpid();
    _exit(loaded ? 1 : 0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(GpuPluginTestbed, FoundByPathByNameAndAsTheDefaultLibrary) {
  ASSERT_FALSE(Env("RS_GPU_PLUGIN").empty());
  EXPECT_EQ(ChildFindsPlugin(Env("RS_GPU_PLUGIN").c_str()), 1);
  EXPECT_EQ(ChildFindsPlugin("rankscope"), 1);  // libnccl-profiler-rankscope.so, library path
  EXPECT_EQ(ChildFindsPlugin(nullptr), 1);      // libnccl-profiler.so, the link beside it
  EXPECT_EQ(ChildFindsPlugin("none"), 0);
}

// NCCL unloads the plugin with its last communicator and loads it again for the next one; the
// plugin stays (-z nodelete): one region per process, its counters going on.
TEST(GpuPluginTestbed, RegionOutlivesTheLastCommunicator) {
  UsePlugin(Env("RS_GPU_PLUGIN"));
  pid_t pid = fork();
  if (pid == 0) {
    uint64_t ino[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
      ncclUniqueId id;
      ncclComm_t comm = nullptr;
      if (ncclGetUniqueId(&id) != ncclSuccess) _exit(10);
      if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) _exit(11);
      auto where = rs::rec::FindGpuRing("/proc", getpid());
      if (!where.ok() || !where.value()) _exit(12);
      struct stat st;
      if (stat(where.value()->path.c_str(), &st) != 0) _exit(12);
      ino[i] = st.st_ino;
      float x = 1;
      if (ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) _exit(13);
      if (cudaStreamSynchronize(nullptr) != cudaSuccess) _exit(14);
      if (ncclCommDestroy(comm) != ncclSuccess) _exit(15);
    }
    std::optional<rs::rec::GpuRingReader> ring = OpenOwnRing();
    if (!ring || ino[0] != ino[1]) _exit(16);
    if (ring->header().comms != 2 || ring->header().ops != 2) _exit(17);
    _exit(PluginMapped() ? 0 : 18);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
}

// One expected record per operation, the same on every rank but for the network bytes.
struct Want {
  uint8_t func;
  uint64_t seq, nccl_seq, count;
  uint8_t datatype;
  int peer;
  uint64_t sent[kRanks], recv[kRanks];
};

TEST(GpuPluginTestbed, EveryCollectiveSendAndReceiveRecorded) {
  UsePlugin(Env("RS_GPU_PLUGIN"));
  ReportDir dir;
  // The id is made after the ranks are forked (see RunRanksWith), kept for its hash.
  ncclUniqueId id{};
  const int64_t began = NowNs();
  auto status = RunRanksWith(
      [&id] {
        EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
        return id;
      },
      kRanks,
      [&dir](int rank, ncclComm_t comm) -> int {
        cudaStream_t s = nullptr;
        CHILD_CHECK(cudaStreamCreate(&s) == cudaSuccess);
        std::optional<rs::rec::GpuRingReader> ring;
        if (int r = Attach(&ring, comm, s)) return r;
        std::vector<float> grads(1536, 1.0f), shard(512), bcast(300, 1.0f);
        std::vector<int32_t> mine(16, rank), gathered(16 * kRanks);
        std::vector<int64_t> reduce_in(300, rank), reduce_out(300), out(10, rank), in(10);
        std::vector<uint16_t> bf16(600, 0x3f80);
        std::vector<double> f64(90, 1.0);
        CHILD_CHECK(ncclAllReduce(grads.data(), grads.data(), 1536, ncclFloat32, ncclSum, comm,
                                  s) == ncclSuccess);
        CHILD_CHECK(ncclAllGather(mine.data(), gathered.data(), 16, ncclInt32, comm, s) ==
                    ncclSuccess);
        CHILD_CHECK(ncclReduceScatter(grads.data(), shard.data(), 512, ncclFloat32, ncclSum, comm,
                                      s) == ncclSuccess);
        CHILD_CHECK(ncclBroadcast(bcast.data(), bcast.data(), 300, ncclFloat32, 1, comm, s) ==
                    ncclSuccess);
        CHILD_CHECK(ncclReduce(reduce_in.data(), reduce_out.data(), 300, ncclInt64, ncclSum, 2,
                               comm, s) == ncclSuccess);
        CHILD_CHECK(ncclGroupStart() == ncclSuccess);  // two collectives, one launch
        CHILD_CHECK(ncclAllReduce(bf16.data(), bf16.data(), 600, ncclBfloat16, ncclMax, comm, s) ==
                    ncclSuccess);
        CHILD_CHECK(ncclAllReduce(f64.data(), f64.data(), 90, ncclFloat64, ncclSum, comm, s) ==
                    ncclSuccess);
        CHILD_CHECK(ncclGroupEnd() == ncclSuccess);
        CHILD_CHECK(ncclGroupStart() == ncclSuccess);  // a ring shift
        CHILD_CHECK(ncclSend(out.data(), 10, ncclInt64, (rank + 1) % kRanks, comm, s) ==
                    ncclSuccess);
        CHILD_CHECK(ncclRecv(in.data(), 10, ncclInt64, (rank + 2) % kRanks, comm, s) ==
                    ncclSuccess);
        CHILD_CHECK(ncclGroupEnd() == ncclSuccess);
        CHILD_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
        CHILD_CHECK(grads[0] == 3.0f && in[0] == (rank + 2) % kRanks);
        return Finish(*ring, comm, dir.Rank(rank));
      },
      60, false);
  ExpectAllZero(status);
  std::vector<RankReport> ranks = dir.LoadAll(kRanks);
  ASSERT_EQ(ranks.size(), static_cast<size_t>(kRanks));

  // The test bed's ring algorithms (collectives.cc), per rank: an AllReduce of B bytes moves
  // 2 (n-1) B/n each way; AllGather / ReduceScatter (n-1) shares; Broadcast a chain from the
  // root; Reduce a ring reduce-scatter, then every share to the root.
  const Want want[] = {
      {RS_GPU_ALL_REDUCE, 2, 1, 1536, 7, -1, {8192, 8192, 8192}, {8192, 8192, 8192}},
      {RS_GPU_ALL_GATHER, 3, 0, 64, 0, -1, {128, 128, 128}, {128, 128, 128}},  // as bytes
      {RS_GPU_REDUCE_SCATTER, 4, 0, 512, 7, -1, {4096, 4096, 4096}, {4096, 4096, 4096}},
      {RS_GPU_BROADCAST, 5, 0, 1200, 0, 1, {0, 1200, 1200}, {1200, 0, 1200}},
      {RS_GPU_REDUCE, 6, 0, 300, 4, 2, {2400, 2400, 1600}, {1600, 1600, 3200}},
      {RS_GPU_ALL_REDUCE, 7, 2, 600, 9, -1, {1600, 1600, 1600}, {1600, 1600, 1600}},
      {RS_GPU_ALL_REDUCE, 8, 3, 90, 8, -1, {960, 960, 960}, {960, 960, 960}},
  };
  const uint64_t hash = rs::NcclCommHash(id.internal, sizeof(id.internal));
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankReport& rep = ranks[r];
    EXPECT_EQ(rep.header.api_version, 7);  // the test bed's NCCL is 2.31's
    EXPECT_EQ(rep.header.ops, 10u);        // the warm-up call, 7 collectives, a send, a receive
    EXPECT_EQ(rep.header.ops_unrecorded, 1u);
    EXPECT_EQ(rep.header.drops_slots_full + rep.header.drops_late_event, 0u);
    EXPECT_TRUE(rep.in_flight.empty());
    ASSERT_EQ(rep.records.size(), 9u);
    for (const rs_gpu_op& op : rep.records) {  // common to every record
      EXPECT_EQ(op.nccl_comm_hash, hash);
      EXPECT_EQ(op.rank, r);
      EXPECT_EQ(op.nranks, kRanks);
      EXPECT_EQ(op.tid, rep.pid);  // the rank's main thread
      EXPECT_EQ(op.state, RS_GPU_COMPLETED);
      // v7: kernel phases for collectives (the test bed's ring kernels report only compute:
      // no sync phase, as NCCL's non-symmetric kernels wait for no peer there), no user tag.
      const bool p2p = op.func == RS_GPU_SEND || op.func == RS_GPU_RECV;
      EXPECT_EQ(op.flags, p2p ? RS_GPU_V7_TASK : RS_GPU_V7_TASK | RS_GPU_KERNEL_PHASES);
      EXPECT_EQ(op.initial_sync_ns, 0);
      EXPECT_EQ(op.final_sync_ns, 0);
      EXPECT_EQ(op.user_tag, 0u);
      EXPECT_EQ(op.channels, 1);
      EXPECT_EQ(op.channels_started, 1);
      EXPECT_EQ(op.channels_stopped, 1);
      EXPECT_GE(op.api_ns, began);
      EXPECT_GE(op.enqueue_ns, op.api_ns);
      // The device's clock: its reading was kDeviceOffset ahead of the host's, after the
      // launch and before the synchronization returned.
      const int64_t start = static_cast<int64_t>(op.device_start_raw) - kDeviceOffset;
      const int64_t end = static_cast<int64_t>(op.device_end_raw) - kDeviceOffset;
      EXPECT_GE(start, op.enqueue_ns);
      EXPECT_GE(end, start);
      EXPECT_LE(end, rep.done_ns);
      // Converted: never earlier than the truth, at most the stated bound later.
      EXPECT_GE(op.clock_error_ns, 0);
      EXPECT_LT(op.clock_error_ns, 1'000'000'000);
      EXPECT_GE(op.device_start_ns, start);
      EXPECT_LE(op.device_start_ns, start + op.clock_error_ns);
      EXPECT_GE(op.device_end_ns, end);
      EXPECT_LE(op.device_end_ns, end + op.clock_error_ns);
    }
    for (size_t i = 0; i < std::size(want); ++i) {
      const rs_gpu_op& op = rep.records[i];
      const Want& w = want[i];
      SCOPED_TRACE("operation " + std::to_string(i));
      EXPECT_EQ(op.func, w.func);
      EXPECT_EQ(op.seq, w.seq);
      EXPECT_EQ(op.nccl_seq, w.nccl_seq);
      EXPECT_EQ(op.count, w.count);
      EXPECT_EQ(op.datatype, w.datatype);
      EXPECT_EQ(op.peer, w.peer);
      EXPECT_EQ(op.algo, RS_GPU_ALGO_RING);
      EXPECT_EQ(op.proto, RS_GPU_PROTO_SIMPLE);
      EXPECT_EQ(op.net_bytes_sent, w.sent[r]);
      EXPECT_EQ(op.net_bytes_recv, w.recv[r]);
      // Its proxy steps timed: one per transfer, where it moved data over the network.
      EXPECT_EQ(op.proxy_steps > 0, op.net_bytes_sent + op.net_bytes_recv > 0);
      EXPECT_EQ(op.flags & RS_GPU_PROXY_TIMES_PARTIAL, 0u);
    }
    // The ring shift: a send to the next rank, a receive from the one after.
    const rs_gpu_op& send = rep.records[7];
    const rs_gpu_op& recv = rep.records[8];
    EXPECT_EQ(send.func, RS_GPU_SEND);
    EXPECT_EQ(send.peer, (r + 1) % kRanks);
    EXPECT_EQ(recv.func, RS_GPU_RECV);
    EXPECT_EQ(recv.peer, (r + 2) % kRanks);
    for (const rs_gpu_op* op : {&send, &recv}) {
      EXPECT_EQ(op->seq, 1u);
      EXPECT_EQ(op->nccl_seq, UINT64_MAX);
      EXPECT_EQ(op->count, 10u);
      EXPECT_EQ(op->datatype, 4);
      EXPECT_EQ(op->algo, RS_GPU_ALGO_UNKNOWN);
    }
    EXPECT_EQ(send.net_bytes_sent, 80u);
    EXPECT_EQ(send.net_bytes_recv, 0u);
    EXPECT_EQ(recv.net_bytes_recv, 80u);
    EXPECT_EQ(recv.net_bytes_sent, 0u);
    // One step each: the send's phases are send phases, the receive's receive phases.
    EXPECT_EQ(send.proxy_steps, 1u);
    EXPECT_EQ(recv.proxy_steps, 1u);
    EXPECT_EQ(send.recv_net_wait_ns + send.recv_gpu_wait_ns, 0);
    EXPECT_EQ(recv.send_gpu_wait_ns + recv.send_peer_wait_ns + recv.send_net_ns, 0);
    EXPECT_EQ(send.net_step_max_peer, (r + 1) % kRanks);
    EXPECT_EQ(send.net_step_max_ns, send.send_net_ns);
  }
  // Counts reconcile across ranks: every byte sent was received (a collective's on its own
  // records, the sends' on the receives').
  auto total = [&ranks](size_t i, uint64_t rs_gpu_op::*field) {
    uint64_t sum = 0;
    for (const RankReport& rep : ranks) sum += i < rep.records.size() ? rep.records[i].*field : 0;
    return sum;
  };
  for (size_t i = 0; i < std::size(want); ++i) {
    EXPECT_EQ(total(i, &rs_gpu_op::net_bytes_sent), total(i, &rs_gpu_op::net_bytes_recv)) << i;
  }
  EXPECT_EQ(total(7, &rs_gpu_op::net_bytes_sent), total(8, &rs_gpu_op::net_bytes_recv));
}

// NCCL 2.28 (profiler API v5) and 2.30 (v6) with the same plugin: the older table is chosen,
// nothing of v7 arrives; the numbering is the same.
TEST(GpuPluginTestbed, OlderNcclChoosesAnOlderTable) {
  UsePlugin(Env("RS_GPU_PLUGIN"));
  for (int api : {5, 6}) {
    SCOPED_TRACE("NCCL's newest profiler API " + std::to_string(api));
    setenv("RANKSCOPE_TESTLIB_PROFILER_API", std::to_string(api).c_str(), 1);
    ReportDir dir;
    auto status = RunRanksWith(
        [] {
          ncclUniqueId id{};
          EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
          return id;
        },
        2,
        [&dir](int rank, ncclComm_t comm) -> int {
          std::optional<rs::rec::GpuRingReader> ring;
          if (int r = Attach(&ring, comm, nullptr)) return r;
          float x[4] = {1, 2, 3, 4};
          CHILD_CHECK(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, nullptr) == ncclSuccess);
          CHILD_CHECK(cudaStreamSynchronize(nullptr) == cudaSuccess);
          return Finish(*ring, comm, dir.Rank(rank));
        },
        60, false);
    unsetenv("RANKSCOPE_TESTLIB_PROFILER_API");
    ExpectAllZero(status);
    for (const RankReport& rep : dir.LoadAll(2)) {
      EXPECT_EQ(rep.header.api_version, api);
      ASSERT_EQ(rep.records.size(), 1u);
      EXPECT_EQ(rep.records[0].seq, 2u);  // after the warm-up call
      EXPECT_EQ(rep.records[0].flags, 0u);
      EXPECT_EQ(rep.records[0].state, RS_GPU_COMPLETED);
    }
  }
}

// Symmetric kernels (RANKSCOPE_TESTLIB_KERNELS=symmetric): a rank that reaches a collective
// 80 ms late waits least at the opening barrier; its peers wait about those 80 ms, each timed
// on its own device clock.
TEST(GpuPluginTestbed, SymmetricKernelsTimeTheirOpeningBarrier) {
  UsePlugin(Env("RS_GPU_PLUGIN"));
  setenv("RANKSCOPE_TESTLIB_KERNELS", "symmetric", 1);
  ReportDir dir;
  constexpr int kLate = 2;
  constexpr int64_t kDelay = 80'000'000;
  auto status = RunRanksWith(
      [] {
        ncclUniqueId id{};
        EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
        return id;
      },
      kRanks,
      [&dir](int rank, ncclComm_t comm) -> int {
        std::optional<rs::rec::GpuRingReader> ring;
        if (int r = Attach(&ring, comm, nullptr)) return r;
        CHILD_CHECK(cudaStreamSynchronize(nullptr) == cudaSuccess);
        if (rank == kLate) usleep(kDelay / 1000);
        float x[4] = {1, 2, 3, 4};
        CHILD_CHECK(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, nullptr) == ncclSuccess);
        CHILD_CHECK(cudaStreamSynchronize(nullptr) == cudaSuccess);
        CHILD_CHECK(x[0] == kRanks);
        return Finish(*ring, comm, dir.Rank(rank));
      },
      60, false);
  unsetenv("RANKSCOPE_TESTLIB_KERNELS");
  ExpectAllZero(status);
  std::vector<RankReport> ranks = dir.LoadAll(kRanks);
  ASSERT_EQ(ranks.size(), static_cast<size_t>(kRanks));
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_EQ(ranks[r].records.size(), 1u);
    const rs_gpu_op& op = ranks[r].records[0];
    EXPECT_EQ(op.flags & (RS_GPU_SYMMETRIC_KERNEL | RS_GPU_KERNEL_PHASES),
              RS_GPU_SYMMETRIC_KERNEL | RS_GPU_KERNEL_PHASES);
    if (r == kLate) {
      EXPECT_LT(op.initial_sync_ns, kDelay / 2);
    } else {
      EXPECT_GT(op.initial_sync_ns, kDelay / 2);
    }
  }
}

// ncclCommSplit: the children's records carry NCCL's hash of the split (parent hash, split
// count, color) and their own numbering; the parent's numbering goes on.
TEST(GpuPluginTestbed, SplitCommunicatorHasItsHashAndNumbers) {
  UsePlugin(Env("RS_GPU_PLUGIN"));
  ReportDir dir;
  ncclUniqueId id{};  // made after the ranks are forked, kept for its hash
  auto status = RunRanksWith(
      [&id] {
        EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
        return id;
      },
      kRanks,
      [&dir](int rank, ncclComm_t comm) -> int {
        cudaStream_t s = nullptr;
        CHILD_CHECK(cudaStreamCreate(&s) == cudaSuccess);
        ncclComm_t sub = nullptr;
        CHILD_CHECK(ncclCommSplit(comm, rank == 1 ? 1 : 0, rank, &sub, nullptr) == ncclSuccess);
        std::optional<rs::rec::GpuRingReader> ring;
        if (int r = Attach(&ring, comm, s)) return r;
        std::vector<float> a(96, 1.0f);
        CHILD_CHECK(ncclAllReduce(a.data(), a.data(), 96, ncclFloat32, ncclSum, sub, s) ==
                    ncclSuccess);
        CHILD_CHECK(ncclAllReduce(a.data(), a.data(), 96, ncclFloat32, ncclSum, comm, s) ==
                    ncclSuccess);
        CHILD_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
        CHILD_CHECK(ncclCommDestroy(sub) == ncclSuccess);
        return Finish(*ring, comm, dir.Rank(rank));
      },
      60, false);
  ExpectAllZero(status);
  std::vector<RankReport> ranks = dir.LoadAll(kRanks);
  ASSERT_EQ(ranks.size(), static_cast<size_t>(kRanks));
  const uint64_t parent = rs::NcclCommHash(id.internal, sizeof(id.internal));
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankReport& rep = ranks[r];
    EXPECT_EQ(rep.header.comms, 2u);
    ASSERT_EQ(rep.records.size(), 2u);
    const rs_gpu_op& child = rep.records[0];
    EXPECT_EQ(child.nccl_comm_hash, rs::NcclSplitCommHash(parent, 1, r == 1 ? 1 : 0));
    EXPECT_EQ(child.seq, 1u);
    EXPECT_EQ(child.nranks, r == 1 ? 1 : 2);
    EXPECT_EQ(child.rank, r == 2 ? 1 : 0);
    EXPECT_EQ(child.net_bytes_sent, r == 1 ? 0u : 384u);  // 96 floats: 2 (n-1) B/n, n = 2
    EXPECT_EQ(child.state, RS_GPU_COMPLETED);
    const rs_gpu_op& whole = rep.records[1];
    EXPECT_EQ(whole.nccl_comm_hash, parent);
    EXPECT_EQ(whole.seq, 2u);  // after the warm-up call
    EXPECT_EQ(whole.nranks, kRanks);
  }
}

// No recorder: operations are only counted (no record, no slot); one that comes mid-job gets
// the same numbers on every rank as if it had been there from the start.
TEST(GpuPluginTestbed, WithoutAReaderOnlyCountingThenConsistentNumbers) {
  UsePlugin(Env("RS_GPU_PLUGIN"));
  ReportDir dir;
  auto status = RunRanks(
      kRanks,
      [&dir](int rank, ncclComm_t comm) -> int {
        cudaStream_t s = nullptr;
        CHILD_CHECK(cudaStreamCreate(&s) == cudaSuccess);
        std::vector<float> a(30, 1.0f);
        std::vector<int64_t> out(4, rank), in(4);
        auto shift = [&] {
          return ncclGroupStart() == ncclSuccess &&
                 ncclSend(out.data(), 4, ncclInt64, (rank + 1) % kRanks, comm, s) == ncclSuccess &&
                 ncclRecv(in.data(), 4, ncclInt64, (rank + 2) % kRanks, comm, s) == ncclSuccess &&
                 ncclGroupEnd() == ncclSuccess;
        };
        for (int i = 0; i < 3; ++i) {
          CHILD_CHECK(ncclAllReduce(a.data(), a.data(), 30, ncclFloat32, ncclSum, comm, s) ==
                      ncclSuccess);
        }
        CHILD_CHECK(shift());
        CHILD_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
        std::optional<rs::rec::GpuRingReader> ring = OpenOwnRing();
        CHILD_CHECK(ring.has_value());
        CHILD_CHECK(ring->header().ops == 5 && ring->header().ops_unrecorded == 5);
        CHILD_CHECK(ring->header().head == 0 && ring->InFlight().empty());
        if (int r = Attach(&ring, comm, s)) return r;  // the 4th AllReduce
        for (int i = 0; i < 2; ++i) {
          CHILD_CHECK(ncclAllReduce(a.data(), a.data(), 30, ncclFloat32, ncclSum, comm, s) ==
                      ncclSuccess);
        }
        CHILD_CHECK(shift());
        CHILD_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
        return Finish(*ring, comm, dir.Rank(rank));
      },
      60, false);
  ExpectAllZero(status);
  std::vector<RankReport> ranks = dir.LoadAll(kRanks);
  for (const RankReport& rep : ranks) {
    EXPECT_EQ(rep.header.ops, 10u);
    EXPECT_EQ(rep.header.ops_unrecorded, 6u);
    EXPECT_EQ(rep.header.drops_late_event, 0u);
    ASSERT_EQ(rep.records.size(), 4u);
    EXPECT_EQ(rep.records[0].seq, 5u);
    EXPECT_EQ(rep.records[0].nccl_seq, 4u);
    EXPECT_EQ(rep.records[1].seq, 6u);
    EXPECT_EQ(rep.records[2].func, RS_GPU_SEND);
    EXPECT_EQ(rep.records[2].seq, 2u);  // the second send to that peer
    EXPECT_EQ(rep.records[3].func, RS_GPU_RECV);
    EXPECT_EQ(rep.records[3].seq, 2u);
  }
}

// The startup window (gpu_ring.h): before any recorder ever read the region, the plugin
// records from the first call on (device events included) until the window ends; after that,
// only counting. A recorder that finds the region then reads the window's records from the
// ring's beginning.
TEST(GpuPluginTestbed, StartupWindowRecordsFromTheFirstCallUntilItEnds) {
  UsePlugin(Env("RS_GPU_PLUGIN"));
  const std::string before = Env("RANKSCOPE_PLUGIN_STARTUP_MS");
  setenv("RANKSCOPE_PLUGIN_STARTUP_MS", "700", 1);  // the ranks' regions are made with it
  ReportDir dir;
  auto status = RunRanks(
      kRanks,
      [&dir](int rank, ncclComm_t comm) -> int {
        const int64_t t0 = NowNs();
        cudaStream_t s = nullptr;
        CHILD_CHECK(cudaStreamCreate(&s) == cudaSuccess);
        std::vector<float> a(30, 1.0f);
        for (int i = 0; i < 3; ++i) {
          CHILD_CHECK(ncclAllReduce(a.data(), a.data(), 30, ncclFloat32, ncclSum, comm, s) ==
                      ncclSuccess);
        }
        CHILD_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
        CHILD_CHECK(NowNs() - t0 < 600'000'000);  // still inside the window
        // Past the window, no reader ever: counted only.
        usleep(800'000);
        for (int i = 0; i < 2; ++i) {
          CHILD_CHECK(ncclAllReduce(a.data(), a.data(), 30, ncclFloat32, ncclSum, comm, s) ==
                      ncclSuccess);
        }
        CHILD_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
        std::optional<rs::rec::GpuRingReader> ring = OpenOwnRing();
        CHILD_CHECK(ring.has_value() && ring->from_start());
        RankReport rep;
        rep.pid = getpid();
        rep.done_ns = NowNs();
        rep.records = ring->Read();
        rep.in_flight = ring->InFlight();
        rep.header = ring->header();
        CHILD_CHECK(rep.Save(dir.Rank(rank)));
        CHILD_CHECK(ncclCommDestroy(comm) == ncclSuccess);
        return 0;
      },
      60, false);
  if (before.empty()) {
    unsetenv("RANKSCOPE_PLUGIN_STARTUP_MS");
  } else {
    setenv("RANKSCOPE_PLUGIN_STARTUP_MS", before.c_str(), 1);
  }
  ExpectAllZero(status);
  for (const RankReport& rep : dir.LoadAll(kRanks)) {
    EXPECT_EQ(rep.header.ops, 5u);
    EXPECT_EQ(rep.header.ops_unrecorded, 2u);
    EXPECT_EQ(rep.header.startup_until_ns - rep.header.created_ns, 700'000'000);
    EXPECT_TRUE(rep.in_flight.empty());
    ASSERT_EQ(rep.records.size(), 3u);
    for (uint64_t i = 0; i < 3; ++i) {
      const rs_gpu_op& op = rep.records[i];
      EXPECT_EQ(op.seq, i + 1);  // the very first call too
      EXPECT_EQ(op.state, RS_GPU_COMPLETED);
      EXPECT_GE(op.device_start_ns, op.enqueue_ns);
      EXPECT_GE(op.device_end_ns, op.device_start_ns);
      EXPECT_LT(op.device_end_ns, rep.header.startup_until_ns);
    }
  }
}

// Through the library's v4 path (NCCL 2.27's interface, gpu_plugin_version_shim.c): numbered in
// launch order; v4 reports no launches, but a RING/SIMPLE collective's receives handed to
// the device bound the clock offset from above (gpu_clock.c) from the first one on.
TEST(GpuPluginTestbed, V4NumbersInLaunchOrderAndBoundsTheClockByReceives) {
  UsePlugin(Env("RS_GPU_PLUGIN_V4_SHIM"));
  ReportDir dir;
  auto status = RunRanks(
      2,
      [&dir](int rank, ncclComm_t comm) -> int {
        cudaStream_t s = nullptr;
        CHILD_CHECK(cudaStreamCreate(&s) == cudaSuccess);
        std::optional<rs::rec::GpuRingReader> ring;
        if (int r = Attach(&ring, comm, s)) return r;
        std::vector<float> a(64, 1.0f);
        for (int i = 0; i < 2; ++i) {
          CHILD_CHECK(ncclAllReduce(a.data(), a.data(), 64, ncclFloat32, ncclSum, comm, s) ==
                      ncclSuccess);
        }
        CHILD_CHECK(cudaStreamSynchronize(s) == cudaSuccess);
        return Finish(*ring, comm, dir.Rank(rank));
      },
      60, false);
  ExpectAllZero(status);
  for (const RankReport& rep : dir.LoadAll(2)) {
    EXPECT_EQ(rep.header.api_version, 4);
    EXPECT_EQ(rep.header.ops_unrecorded, 1u);
    ASSERT_EQ(rep.records.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      const rs_gpu_op& op = rep.records[i];
      EXPECT_EQ(op.seq, i + 2);
      EXPECT_EQ(op.flags, static_cast<uint32_t>(RS_GPU_SEQ_LAUNCH_ORDER));
      EXPECT_GE(op.clock_error_ns, 0);
      EXPECT_EQ(op.api_ns, 0);
      EXPECT_EQ(op.state, RS_GPU_COMPLETED);
      EXPECT_EQ(op.net_bytes_sent, 256u);  // 64 floats over 2 ranks
      const int64_t start_truth = static_cast<int64_t>(op.device_start_raw) - kDeviceOffset;
      const int64_t end_truth = static_cast<int64_t>(op.device_end_raw) - kDeviceOffset;
      EXPECT_GE(op.device_start_ns, start_truth);
      EXPECT_LE(op.device_start_ns, start_truth + op.clock_error_ns);
      EXPECT_GE(op.device_end_ns, end_truth);
      EXPECT_LE(op.device_end_ns, end_truth + op.clock_error_ns);
    }
  }
}

}  // namespace
}  // namespace rs_testbed
