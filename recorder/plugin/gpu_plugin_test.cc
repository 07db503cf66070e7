// rankscope's NCCL profiler plugin (libnccl-profiler-rankscope.so, path in RS_GPU_PLUGIN)
// driven through its ncclProfiler_v5 table as NCCL 2.28 drives it (profiler_driver.h), the
// records read from this process's region with the recorder's reader. The device is made up:
// its clock runs kDeviceOffset ahead of the host, so every converted time can be checked
// against the truth. The plugin keeps one region per process: tests read only what they
// wrote (the reader's Read returns new records, counters are compared before and after).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "recorder/plugin/gpu_plugin_testing.h"
#include "recorder/plugin/gpu_plugin_v5_fixture.h"
#include "recorder/plugin/profiler_driver.h"

namespace rs_test {
namespace {

// This process's descriptors of "/memfd:rankscope-gpu (deleted)", with their inodes.
struct Memfd {
  int fd;
  ino_t ino;
};
std::vector<Memfd> Memfds() {
  std::vector<Memfd> out;
  for (int fd = 0; fd < 1024; ++fd) {
    char link[256];
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
    if (n <= 0) continue;
    link[n] = '\0';
    struct stat st;
    if (std::string(link) == "/memfd:" RS_GPU_RING_NAME " (deleted)" && fstat(fd, &st) == 0) {
      out.push_back({fd, st.st_ino});
    }
  }
  return out;
}

TEST_F(V5, RegionIsAnOpenMemfdWithTheHeader) {
  const rs_gpu_ring_header& h = OwnRing()->header();
  EXPECT_EQ(h.magic, RS_GPU_RING_MAGIC);
  EXPECT_EQ(h.version, static_cast<uint32_t>(RS_GPU_RING_VERSION));
  EXPECT_EQ(h.header_bytes, static_cast<uint32_t>(RS_GPU_HEADER_BYTES));
  EXPECT_EQ(h.record_bytes, sizeof(rs_gpu_op));
  EXPECT_EQ(h.slot_count, static_cast<uint32_t>(RS_GPU_SLOT_COUNT));
  EXPECT_EQ(h.ring_records, static_cast<uint32_t>(RS_GPU_RING_RECORDS));
  EXPECT_EQ(h.pid, getpid());
  EXPECT_EQ(h.api_version, 5);
  EXPECT_EQ(std::string(h.plugin_version).rfind("rankscope ", 0), 0u) << h.plugin_version;
  EXPECT_GE(h.comms, 1u);
  // The plugin's descriptor and the reader's: one region, close-on-exec, its full size.
  std::vector<Memfd> fds = Memfds();
  ASSERT_EQ(fds.size(), 2u);
  EXPECT_EQ(fds[0].ino, fds[1].ino);
  for (const Memfd& m : fds) {
    EXPECT_EQ(fcntl(m.fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    EXPECT_EQ(lseek(m.fd, 0, SEEK_END),
              static_cast<off_t>(RS_GPU_REGION_BYTES(RS_GPU_SLOT_COUNT, RS_GPU_RING_RECORDS)));
  }
  // One region per process: a second communicator does not make another.
  Comm(0x5e8);
  EXPECT_EQ(Memfds().size(), 2u);
}

TEST_F(V5, OnlyTheTwoTablesAreExported) {
  EXPECT_NE(dlsym(PluginLibrary(), "ncclProfiler_v5"), nullptr);
  EXPECT_NE(dlsym(PluginLibrary(), "ncclProfiler_v4"), nullptr);
  for (const char* internal : {"rs_gpu_region_open", "rs_gpu_slot_take", "rs_gpu_clock_at",
                               "rs_gpu_mask_want_full", "rs_gpu_func_of"}) {
    EXPECT_EQ(dlsym(PluginLibrary(), internal), nullptr) << internal;
  }
  EXPECT_STREQ(PluginV5()->name, "rankscope");
}

TEST_F(V5, MaskHasDeviceEventsOnlyWhileAReaderBeats) {
  SetReader(false);
  ProfilerDriver* d = Comm(0xa1);
  ASSERT_EQ(d->init_result(), 0);
  d->Launch({d->Collective("AllReduce", 8)});
  EXPECT_EQ(d->mask(), kBaseMaskV5);
  SetReader(true);
  d->Launch({d->Collective("AllReduce", 8)});  // the call's start sees the reader
  EXPECT_EQ(d->mask(), kBaseMaskV5 | kDeviceEvents);
  OwnRing()->Heartbeat(NowNs() - RS_GPU_READER_TIMEOUT_NS - 1);  // the reader went away
  d->Launch({d->Collective("AllReduce", 8)});
  EXPECT_EQ(d->mask(), kBaseMaskV5);
}

TEST_F(V5, WithoutAReaderOperationsAreOnlyCounted) {
  SetReader(false);
  ProfilerDriver* d = Comm(0xa2);
  for (int i = 0; i < 5; ++i) {
    std::vector<ProfilerDriver::Task> t = d->Launch({d->Collective("AllReduce", 8)});
    EXPECT_EQ(t[0].handle, nullptr);
    EXPECT_EQ(d->KernelChStart(t[0], 1), nullptr);  // the mask has no KernelCh
  }
  d->Launch({d->PointToPoint("Send", 8, 2)});
  const Counters c = Delta();
  EXPECT_EQ(c.ops, 6u);
  EXPECT_EQ(c.unrecorded, 6u);
  EXPECT_EQ(c.late, 0u);
  EXPECT_TRUE(Records().empty());
  EXPECT_TRUE(OwnRing()->InFlight().empty());
}

// Numbering goes on without a reader: a reader that comes later sees the same numbers on
// every rank. The first call after it came was made with the mask NCCL read before: counted.
TEST_F(V5, NumberingGoesOnWithoutAReader) {
  SetReader(false);
  ProfilerDriver* d = Comm(0xa3);
  for (int i = 0; i < 3; ++i) d->Launch({d->Collective("AllReduce", 8)});
  SetReader(true);
  std::vector<ProfilerDriver::Task> first = d->Launch({d->Collective("AllReduce", 8)});
  EXPECT_EQ(first[0].handle, nullptr);
  std::vector<ProfilerDriver::Task> second = d->Launch({d->Collective("AllReduce", 8)});
  ASSERT_NE(second[0].handle, nullptr);
  RunOnDevice(d, second[0]);
  std::vector<rs_gpu_op> r = Records();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].seq, 5u);
  EXPECT_EQ(r[0].nccl_seq, 4u);
  const Counters c = Delta();
  EXPECT_EQ(c.ops, 5u);
  EXPECT_EQ(c.unrecorded, 4u);
}

TEST_F(V5, CollectiveRecordHasEveryField) {
  SetReader(true);
  ProfilerDriver* d = Comm(0xc0ffee, 4, 1);
  d->Launch({d->Collective("AllReduce", 4)});  // switches the mask on: not recorded
  const int64_t before = NowNs();
  std::vector<ProfilerDriver::Task> t = d->Launch({d->Collective("AllReduce", 1536)});
  const int64_t after = NowNs();
  ASSERT_NE(t[0].handle, nullptr);
  const DeviceRun run = RunOnDevice(d, t[0], 3, 2048);
  std::vector<rs_gpu_op> r = Records();
  ASSERT_EQ(r.size(), 1u);
  const rs_gpu_op& op = r[0];
  EXPECT_EQ(op.nccl_comm_hash, 0xc0ffeeu);
  EXPECT_EQ(op.seq, 2u);
  EXPECT_EQ(op.nccl_seq, 1u);
  EXPECT_GE(op.api_ns, before);
  EXPECT_GE(op.enqueue_ns, op.api_ns);
  EXPECT_LE(op.enqueue_ns, after);
  ExpectConverted(op, run);
  EXPECT_EQ(op.count, 1536u);
  EXPECT_EQ(op.net_bytes_sent, 3u * 2048);  // SendWait once per step, not every send state
  EXPECT_EQ(op.net_bytes_recv, 3u * 2048);  // RecvFlushWait once per step
  EXPECT_EQ(op.rank, 1);
  EXPECT_EQ(op.nranks, 4);
  EXPECT_EQ(op.peer, -1);
  EXPECT_EQ(op.tid, Gettid());
  EXPECT_EQ(op.func, RS_GPU_ALL_REDUCE);
  EXPECT_EQ(op.datatype, 7);  // ncclFloat32
  EXPECT_EQ(op.algo, RS_GPU_ALGO_RING);
  EXPECT_EQ(op.proto, RS_GPU_PROTO_SIMPLE);
  EXPECT_EQ(op.state, RS_GPU_COMPLETED);
  EXPECT_EQ(op.channels, 1);
  EXPECT_EQ(op.channels_started, 1);
  EXPECT_EQ(op.channels_stopped, 1);
  EXPECT_EQ(op.flags, 0u);
  EXPECT_EQ(op.graph_call_seq, 0u);
  EXPECT_TRUE(OwnRing()->InFlight().empty());
  const Counters c = Delta();
  EXPECT_EQ(c.ops, 2u);
  EXPECT_EQ(c.unrecorded, 1u);
  EXPECT_EQ(c.late, 0u);
}

TEST_F(V5, NamesRootsAndUnknownValues) {
  SetReader(true);
  ProfilerDriver* d = Comm(0xa4);
  d->Launch({d->Collective("AllReduce", 4)});
  struct Case {
    const char* func;
    const char* datatype;
    int root;
    uint8_t want_func, want_type;
    int want_peer;
  };
  const Case cases[] = {{"Broadcast", "ncclInt8", 3, RS_GPU_BROADCAST, 0, 3},
                        {"Reduce", "ncclBfloat16", 2, RS_GPU_REDUCE, 9, 2},
                        {"AllGather", "ncclInt8", 0, RS_GPU_ALL_GATHER, 0, -1},
                        {"ReduceScatter", "ncclFloat8e5m2", 0, RS_GPU_REDUCE_SCATTER, 11, -1},
                        {"AllReduce", "Unknown", 0, RS_GPU_ALL_REDUCE, 255, -1}};  // ncclUint8
  for (const Case& c : cases) {
    RunOnDevice(d, d->Launch({d->Collective(c.func, 64, c.datatype, c.root)})[0]);
  }
  std::vector<rs_gpu_op> r = Records();
  ASSERT_EQ(r.size(), std::size(cases));
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].func, cases[i].want_func) << cases[i].func;
    EXPECT_EQ(r[i].datatype, cases[i].want_type) << cases[i].datatype;
    EXPECT_EQ(r[i].peer, cases[i].want_peer) << cases[i].func;
    EXPECT_EQ(r[i].seq, i + 2);
  }
  // A collective call of a function nccl_events does not number (an AlltoAll's own CollApi
  // event): neither numbered nor recorded (counted), and the next call follows on.
  const Counters before = Delta();
  RunOnDevice(d, d->Launch({d->Collective("AlltoAll", 64, "ncclInt64")})[0]);
  RunOnDevice(d, d->Launch({d->Collective("AllReduce", 64)})[0]);
  r = Records();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].func, RS_GPU_ALL_REDUCE);
  EXPECT_EQ(r[0].seq, std::size(cases) + 2);
  EXPECT_EQ(Delta().unrecorded - before.unrecorded, 1u);
}

// NCCL reorders a group's collectives at launch (by size and kind); seq is the call order.
TEST_F(V5, SeqIsTheCallOrderEvenWhenLaunchedInAnotherOrder) {
  SetReader(true);
  ProfilerDriver* d = Comm(0xa5);
  d->Launch({d->Collective("AllReduce", 4)});
  d->GroupStart();
  ProfilerDriver::Call small = d->Collective("AllReduce", 16, "ncclFloat32", 0, 2);
  ProfilerDriver::Call big = d->Collective("AllReduce", 1 << 20, "ncclFloat32", 0, 2);
  std::vector<ProfilerDriver::Task> t = d->Launch({big, small});
  for (const ProfilerDriver::Task& task : t) RunOnDevice(d, task);
  std::vector<rs_gpu_op> r = Records();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].count, 1u << 20);
  EXPECT_EQ(r[0].seq, 3u);       // the second call
  EXPECT_EQ(r[0].nccl_seq, 1u);  // launched first
  EXPECT_EQ(r[1].count, 16u);
  EXPECT_EQ(r[1].seq, 2u);
  EXPECT_EQ(r[1].nccl_seq, 2u);
}

TEST_F(V5, SendsAndReceivesCountPerPeerAndDirection) {
  SetReader(true);
  ProfilerDriver* d = Comm(0xa6, 4, 0);
  d->Launch({d->Collective("AllReduce", 4)});
  d->GroupStart();
  std::vector<ProfilerDriver::Call> calls = {
      d->PointToPoint("Send", 10, 1, "ncclInt8", 2), d->PointToPoint("Send", 20, 1, "ncclInt8", 2),
      d->PointToPoint("Send", 30, 2, "ncclInt8", 2), d->PointToPoint("Recv", 40, 1, "ncclInt8", 2)};
  for (const ProfilerDriver::Task& t : d->Launch(calls)) RunOnDevice(d, t, 1, 100);
  std::vector<rs_gpu_op> r = Records();
  ASSERT_EQ(r.size(), 4u);
  const uint64_t want_seq[] = {1, 2, 1, 1};
  const int want_peer[] = {1, 1, 2, 1};
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].seq, want_seq[i]) << i;
    EXPECT_EQ(r[i].peer, want_peer[i]) << i;
    EXPECT_EQ(r[i].nccl_seq, UINT64_MAX);
    EXPECT_EQ(r[i].count, 10u * (i + 1));
    EXPECT_EQ(r[i].func, i < 3 ? RS_GPU_SEND : RS_GPU_RECV);
    EXPECT_EQ(r[i].algo, RS_GPU_ALGO_UNKNOWN);
    EXPECT_GT(r[i].api_ns, 0);
    EXPECT_EQ(r[i].state, RS_GPU_COMPLETED);
  }
}

// A record is written when the host, every channel and every proxy operation are done, in
// whatever order they finish.
TEST_F(V5, WrittenOnlyAfterEveryPartStopped) {
  SetReader(true);
  ProfilerDriver* d = Comm(0xa7);
  d->Launch({d->Collective("AllReduce", 4)});
  // A proxy operation that outlives the kernel.
  ProfilerDriver::Task t = d->Launch({d->Collective("AllReduce", 8)}, 2)[0];
  void* ch0 = d->KernelChStart(t, static_cast<uint64_t>(NowNs() + kDeviceOffset));
  void* ch1 = d->KernelChStart(t, static_cast<uint64_t>(NowNs() + kDeviceOffset - 10));
  void* op = d->ProxyOpStart(t, 2, true, 1);
  d->KernelChStop(ch0, static_cast<uint64_t>(NowNs() + kDeviceOffset));
  EXPECT_TRUE(Records().empty());  // one channel of two
  d->KernelChStop(ch1, static_cast<uint64_t>(NowNs() + kDeviceOffset));
  EXPECT_TRUE(Records().empty());  // the proxy operation is open
  std::vector<rs_gpu_op> flight = OwnRing()->InFlight();
  ASSERT_EQ(flight.size(), 1u);
  EXPECT_EQ(flight[0].state, RS_GPU_COMPLETED);  // the kernel is done: the slot says so
  EXPECT_EQ(flight[0].channels_stopped, 2);
  EXPECT_GT(flight[0].device_end_ns, 0);
  d->ProxyStep(op, 0, true, 77);
  d->Stop(op);
  std::vector<rs_gpu_op> r = Records();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].state, RS_GPU_COMPLETED);
  EXPECT_EQ(r[0].channels, 2);
  EXPECT_EQ(r[0].channels_started, 2);
  EXPECT_EQ(r[0].net_bytes_sent, 77u);
  EXPECT_LT(r[0].device_start_raw, r[0].device_end_raw);  // the earlier channel's start
}

// The device may finish before NCCL's host thread stops the task's event.
TEST_F(V5, WrittenAtTheHostStopWhenTheDeviceWasFirst) {
  SetReader(true);
  ProfilerDriver* d = Comm(0xa8);
  d->Launch({d->Collective("AllReduce", 4)});
  ProfilerDriver::Call call = d->Collective("AllReduce", 8);
  ncclProfilerEventDescr_v7_t desc;
  std::memset(&desc, 0, sizeof(desc));
  desc.type = ncclProfileColl;
  desc.parentObj = call.api;
  desc.coll.func = "AllReduce";
  desc.coll.nChannels = 1;
  ProfilerDriver::Task t{d->Start(desc), call.mask};
  ASSERT_NE(t.handle, nullptr);
  RunOnDevice(d, t);
  EXPECT_TRUE(Records().empty());
  d->Stop(t.handle);
  ASSERT_EQ(Records().size(), 1u);
}

TEST_F(V5, EventsAfterTheRecordAreCountedLate) {
  SetReader(true);
  ProfilerDriver* d = Comm(0xa9);
  d->Launch({d->Collective("AllReduce", 4)});
  ProfilerDriver::Task t = d->Launch({d->Collective("AllReduce", 8)})[0];
  void* ch = d->KernelChStart(t, static_cast<uint64_t>(NowNs() + kDeviceOffset));
  void* op = d->ProxyOpStart(t, 1, true, 2);
  void* step = d->ProxyStepStart(op, 0);
  d->Stop(step);
  d->Stop(op);
  d->KernelChStop(ch, static_cast<uint64_t>(NowNs() + kDeviceOffset));
  ASSERT_EQ(Records().size(), 1u);
  // The slot is free (or already another operation's): nothing of these may reach it.
  ProfilerDriver::Task other = d->Launch({d->Collective("AllReduce", 8)})[0];
  EXPECT_EQ(d->KernelChStart(t, 1), nullptr);
  EXPECT_EQ(d->ProxyOpStart(t, 1, true, 1), nullptr);
  EXPECT_EQ(d->ProxyStepStart(op, 1), nullptr);
  d->ProxyStepStates(step, true, 5);  // a state of a stopped step: counted once
  d->Stop(ch);
  EXPECT_EQ(Delta().late, 5u);
  RunOnDevice(d, other, 1, 9);
  std::vector<rs_gpu_op> r = Records();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].net_bytes_sent, 9u);
  EXPECT_EQ(r[0].channels_started, 1);
}

// ncclCommDestroy / ncclCommAbort: what never completed is written with its state.
TEST_F(V5, FinalizeWritesWhatIsInFlight) {
  SetReader(true);
  ProfilerDriver* d = Comm(0xaa);
  ProfilerDriver* other = Comm(0xab);
  d->Launch({d->Collective("AllReduce", 4)});  // the mask is shared: one call switches it
  ProfilerDriver::Task started = d->Launch({d->Collective("AllReduce", 8)})[0];
  const int64_t start_truth = NowNs();
  void* ch = d->KernelChStart(started, static_cast<uint64_t>(start_truth + kDeviceOffset));
  ProfilerDriver::Task enqueued = d->Launch({d->Collective("AllGather", 8)})[0];
  ProfilerDriver::Task kept = other->Launch({other->Collective("AllReduce", 8)})[0];
  ASSERT_EQ(OwnRing()->InFlight().size(), 3u);
  d->Finalize();
  std::vector<rs_gpu_op> r = BySeq(Records());
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].seq, 2u);
  EXPECT_EQ(r[0].state, RS_GPU_STARTED);
  EXPECT_EQ(r[0].flags & RS_GPU_FINALIZED, RS_GPU_FINALIZED);
  EXPECT_GE(r[0].device_start_ns, start_truth);
  EXPECT_LE(r[0].device_start_ns, start_truth + r[0].clock_error_ns);
  EXPECT_EQ(r[0].device_end_ns, 0);
  EXPECT_EQ(r[1].seq, 3u);
  EXPECT_EQ(r[1].state, RS_GPU_ENQUEUED);
  EXPECT_EQ(r[1].flags, static_cast<uint32_t>(RS_GPU_FINALIZED));
  EXPECT_EQ(r[1].device_start_ns, 0);
  std::vector<rs_gpu_op> flight = OwnRing()->InFlight();
  ASSERT_EQ(flight.size(), 1u);  // the other communicator's
  EXPECT_EQ(flight[0].nccl_comm_hash, 0xabu);
  d->KernelChStop(ch, 1);  // late: the record is written
  EXPECT_EQ(Delta().late, 2u);
  RunOnDevice(other, kept);
  EXPECT_EQ(Records().size(), 1u);
  (void)enqueued;
}

TEST_F(V5, AllSlotsInUseDropsAndCounts) {
  SetReader(true);
  ProfilerDriver* d = Comm(0xac);
  d->Launch({d->Collective("AllReduce", 4)});
  for (int i = 0; i < RS_GPU_SLOT_COUNT; ++i) {
    ASSERT_NE(d->Launch({d->Collective("AllReduce", 8)})[0].handle, nullptr) << i;
    if (i % 256 == 0) SetReader(true);
  }
  EXPECT_EQ(d->Launch({d->Collective("AllReduce", 8)})[0].handle, nullptr);
  EXPECT_EQ(Delta().slots_full, 1u);
  EXPECT_EQ(OwnRing()->InFlight().size(), static_cast<size_t>(RS_GPU_SLOT_COUNT));
  d->Finalize();
  std::vector<rs_gpu_op> r = Records();
  EXPECT_EQ(r.size(), static_cast<size_t>(RS_GPU_SLOT_COUNT));
  EXPECT_TRUE(OwnRing()->InFlight().empty());
  // Counts reconcile: every operation is in the ring, or unrecorded, or dropped.
  const Counters c = Delta();
  EXPECT_EQ(c.ops, c.unrecorded + c.slots_full + r.size());
}

// Two communicators, each with its host thread and its "proxy" thread, while a third thread
// makes a recorder come and go every few hundred microseconds: the host's stop races the
// device's events, mask switches race the calls. Every operation is recorded exactly once or
// counted, none stays in flight, none is late.
TEST_F(V5, ConcurrentHostDeviceAndReaderSwitches) {
  constexpr int kOps = 20000;
  struct Lane {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<ProfilerDriver::Task> queue;
    bool done = false;
  };
  Lane lanes[2];
  ProfilerDriver* comms[2] = {Comm(0xd0, 2, 0), Comm(0xd1, 2, 1)};
  // The recorder: reads the ring as it beats, as rankscope-record does; it comes and goes
  // after every 200 or more operations (and 300 us), so both phases are seen whatever the
  // scheduler does.
  std::atomic<bool> stop_flapping{false};
  std::atomic<int> host_ops{0};
  std::vector<rs_gpu_op> r;
  const uint64_t overruns_before = OwnRing()->overruns();
  SetReader(true);
  std::thread flapper([&] {
    bool present = true;
    int last = 0;
    while (!stop_flapping.load()) {
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      for (const rs_gpu_op& op : Records()) r.push_back(op);
      if (host_ops.load() < last + 200) continue;
      last = host_ops.load();
      present = !present;
      SetReader(present);
    }
    SetReader(true);
  });
  std::vector<std::thread> threads;
  for (int c = 0; c < 2; ++c) {
    threads.emplace_back([&, c] {  // the host
      ProfilerDriver* d = comms[c];
      for (int i = 0; i < kOps; ++i) {
        ProfilerDriver::Task t = d->Launch({d->Collective("AllReduce", 64)}, 1, false)[0];
        if (t.handle != nullptr && (t.mask & ncclProfileKernelCh)) {
          std::unique_lock<std::mutex> lock(lanes[c].mu);
          // NCCL's launches wait when its queues are full: a few hundred in flight at most.
          lanes[c].cv.wait(lock, [&] { return lanes[c].queue.size() < 256; });
          lanes[c].queue.push_back(t);
          lanes[c].cv.notify_all();
        }
        d->Stop(t.handle);  // races the device's events
        ++host_ops;
      }
      std::lock_guard<std::mutex> lock(lanes[c].mu);
      lanes[c].done = true;
      lanes[c].cv.notify_all();
    });
    threads.emplace_back([&, c] {  // NCCL's proxy thread
      for (;;) {
        ProfilerDriver::Task t;
        {
          std::unique_lock<std::mutex> lock(lanes[c].mu);
          lanes[c].cv.wait(lock, [&] { return lanes[c].done || !lanes[c].queue.empty(); });
          if (lanes[c].queue.empty()) return;
          t = lanes[c].queue.front();
          lanes[c].queue.pop_front();
          lanes[c].cv.notify_all();
        }
        RunOnDevice(comms[c], t, 2, 10);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  stop_flapping = true;
  flapper.join();
  EXPECT_TRUE(OwnRing()->InFlight().empty());
  for (const rs_gpu_op& op : Records()) r.push_back(op);
  const uint64_t overruns = OwnRing()->overruns() - overruns_before;
  const Counters c = Delta();
  EXPECT_EQ(c.ops, 2u * kOps);
  EXPECT_EQ(c.late, 0u);
  EXPECT_EQ(c.slots_full, 0u);
  EXPECT_EQ(r.size() + overruns, c.ops - c.unrecorded);  // read, or lost to the ring's wrap
  EXPECT_GT(r.size(), 0u);
  EXPECT_GT(c.unrecorded, 0u);
  std::map<uint64_t, std::set<uint64_t>> seqs;
  for (const rs_gpu_op& op : r) {
    EXPECT_EQ(op.state, RS_GPU_COMPLETED);
    EXPECT_EQ(op.net_bytes_sent, 20u);
    EXPECT_EQ(op.net_bytes_recv, 20u);
    EXPECT_TRUE(seqs[op.nccl_comm_hash].insert(op.seq).second) << "seq written twice";
    EXPECT_LE(op.seq, static_cast<uint64_t>(kOps));
  }
}

// A process that forks: the child forgets the parent's region (closes its descriptor, never
// writes into it) and makes its own at its first init.
TEST_F(V5, ForkedChildMakesItsOwnRegion) {
  const std::vector<Memfd> parent = Memfds();  // the plugin's and the reader's
  ASSERT_EQ(parent.size(), 2u);
  const uint64_t parent_ops = OwnRing()->header().ops;
  pid_t pid = fork();
  if (pid == 0) {
    if (Memfds().size() != 1) _exit(1);  // only the reader's inherited descriptor
    ProfilerDriver child(PluginV5(), 0x77, 2, 0);
    if (child.init_result() != 0) _exit(2);
    child.Launch({child.Collective("AllReduce", 8)});
    std::vector<Memfd> now = Memfds();
    if (now.size() != 2) _exit(3);
    const Memfd& mine = now[0].ino == parent[0].ino ? now[1] : now[0];
    if (mine.ino == parent[0].ino) _exit(4);
    auto reader = rs::rec::GpuRingReader::Open("/proc/self/fd/" + std::to_string(mine.fd));
    if (!reader.ok()) _exit(5);
    const rs_gpu_ring_header& h = reader->header();
    if (h.pid != getpid() || h.comms != 1 || h.ops != 1) _exit(6);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(OwnRing()->header().ops, parent_ops);
}

// RANKSCOPE_PLUGIN_PROXY_TIMES=0 when a process makes its region: no proxy step is timed (the
// header says so for the recorder's metadata), its network bytes still are.
TEST_F(V5, ProxyTimesOffInAProcessMadeWithTheVariable) {
  const std::vector<Memfd> parent = Memfds();
  pid_t pid = fork();
  if (pid == 0) {
    setenv("RANKSCOPE_PLUGIN_PROXY_TIMES", "0", 1);
    ProfilerDriver child(PluginV5(), 0x78, 2, 0);
    if (child.init_result() != 0) _exit(2);
    std::vector<Memfd> now = Memfds();
    if (now.size() != 2) _exit(3);
    const Memfd& mine = now[0].ino == parent[0].ino ? now[1] : now[0];
    auto reader = rs::rec::GpuRingReader::Open("/proc/self/fd/" + std::to_string(mine.fd));
    if (!reader.ok()) _exit(4);
    if (reader->header().proxy_times_off != 1) _exit(5);
    reader->Heartbeat(NowNs());
    child.Launch({child.Collective("AllReduce", 4)});  // the next call has the device events
    ProfilerDriver::Task t = child.Launch({child.Collective("AllReduce", 8)})[0];
    void* ch = child.KernelChStart(t, static_cast<uint64_t>(NowNs() + kDeviceOffset));
    void* op = child.ProxyOpStart(t, 1, true, 1);
    child.ProxyStep(op, 0, true, 50);
    child.Stop(op);
    child.KernelChStop(ch, static_cast<uint64_t>(NowNs() + kDeviceOffset));
    const std::vector<rs_gpu_op> r = reader->Read();
    if (r.size() != 1) _exit(6);
    if (r[0].net_bytes_sent != 50) _exit(7);
    if (r[0].proxy_steps != 0 || r[0].send_net_ns != 0 || r[0].net_step_max_peer != -1) _exit(8);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(OwnRing()->header().proxy_times_off, 0u);  // this process's region times them
}

}  // namespace
}  // namespace rs_test
