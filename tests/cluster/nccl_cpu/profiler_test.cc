// The test bed library calls a profiler plugin as NCCL 2.28 does: a plugin built against
// rscore/nccl_profiler.h (test_profiler_plugin.cc) logs every call, and the log is checked
// field by field: init's commHash (NCCL's hash of the unique id), name, nNodes, nranks and
// rank; per call the API events, the kernel launch, the Group and Coll/P2p events with NCCL's
// sequence numbers and strings on the calling thread; KernelCh with the device's clock and
// ProxyOp/ProxyStep on the device; finalize at destroy. Then the v4 interface, and how the
// plugin is found. Three ranks live in this process, each on its own device and stream.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cuda_runtime_api.h"
#include "nccl.h"
#include "rscore/nccl_comm_hash.h"
#include "rscore/nccl_profiler.h"
#include "test_profiler_log.h"

namespace {

constexpr int kRanks = 3;

using EventsFn = size_t (*)(RsTestEvent*, size_t);

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// The plugin's log; the library is kept loaded by this extra reference.
std::vector<RsTestEvent> Log(void* plugin) {
  auto fn = reinterpret_cast<EventsFn>(dlsym(plugin, "rstest_profiler_events"));
  if (fn == nullptr) return {};
  size_t n = fn(nullptr, 0);
  std::vector<RsTestEvent> out(n);
  fn(out.data(), n);
  return out;
}

struct World {
  ncclUniqueId id{};
  ncclComm_t comms[kRanks] = {};
  cudaStream_t streams[kRanks] = {};
  void* plugin = nullptr;
  ~World() {  // what a failed test left
    for (ncclComm_t& c : comms) {
      if (c != nullptr) ncclCommAbort(c);
    }
    if (plugin != nullptr) dlclose(plugin);
  }
  void Destroy() {
    for (ncclComm_t& c : comms) {
      EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
      c = nullptr;
    }
  }
};

// Three communicators of one id, rank r on device r, named "rstest-world"; the plugin loaded.
::testing::AssertionResult Join(World* w, const std::string& plugin_path) {
  setenv("RANKSCOPE_TESTLIB_COLLECTIVES", "async", 1);
  setenv("NCCL_PROFILER_PLUGIN", plugin_path.c_str(), 1);
  if (ncclGetUniqueId(&w->id) != ncclSuccess) return ::testing::AssertionFailure() << "no id";
  std::vector<std::thread> threads;
  std::vector<ncclResult_t> results(kRanks, ncclInternalError);
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([w, r, &results] {
      cudaSetDevice(r);
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.commName = "rstest-world";
      results[r] = ncclCommInitRankConfig(&w->comms[r], kRanks, w->id, r, &config);
      cudaStreamCreate(&w->streams[r]);
    });
  }
  for (std::thread& t : threads) t.join();
  w->plugin = dlopen(plugin_path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  for (ncclResult_t r : results) {
    if (r != ncclSuccess) return ::testing::AssertionFailure() << "ncclCommInitRankConfig: " << r;
  }
  if (w->plugin == nullptr) {
    return ::testing::AssertionFailure()
           << "the library did not load the plugin '" << plugin_path << "' (is it built?)";
  }
  return ::testing::AssertionSuccess();
}

const RsTestEvent* FindStart(const std::vector<RsTestEvent>& log, int handle) {
  for (const RsTestEvent& e : log) {
    if (e.call == RsTestEvent::kStart && e.handle == handle) return &e;
  }
  return nullptr;
}

// Counts reconcile: every event started is stopped exactly once, nothing else is stopped.
void ExpectEveryStartStoppedOnce(const std::vector<RsTestEvent>& log) {
  std::map<int, int> stops;
  std::set<int> started;
  for (const RsTestEvent& e : log) {
    if (e.call == RsTestEvent::kStart) started.insert(e.handle);
    if (e.call == RsTestEvent::kStop) ++stops[e.handle];
  }
  for (int h : started) EXPECT_EQ(stops[h], 1) << "event " << h;
  for (auto& [h, n] : stops) EXPECT_TRUE(started.count(h)) << "stopped unknown event " << h;
}

TEST(NcclProfiler, V5SeesEveryEventAsNcclPassesIt) {
  World w;
  ASSERT_TRUE(Join(&w, Env("RSTEST_PLUGIN_V5")));
  const int self = static_cast<int>(syscall(SYS_gettid));
  const size_t count = 1536;  // divisible by 3 ranks: every ring step moves 512 floats
  std::vector<std::vector<float>> grads(kRanks);
  std::vector<std::vector<int32_t>> mine(kRanks), gathered(kRanks);
  std::vector<std::vector<int64_t>> out(kRanks), in(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    grads[r].assign(count, static_cast<float>(r + 1));
    mine[r].assign(16, r);
    gathered[r].assign(16 * kRanks, -1);
    out[r].assign(10, r);
    in[r].assign(10, -1);
  }
  for (int round = 0; round < 2; ++round) {
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_EQ(ncclAllReduce(grads[r].data(), grads[r].data(), count, ncclFloat32, ncclSum,
                              w.comms[r], w.streams[r]),
                ncclSuccess);
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(
        ncclAllGather(mine[r].data(), gathered[r].data(), 16, ncclInt32, w.comms[r], w.streams[r]),
        ncclSuccess);
  }
  for (int r = 0; r < kRanks; ++r) {  // a ring shift in a user group
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclSend(out[r].data(), 10, ncclInt64, (r + 1) % kRanks, w.comms[r], w.streams[r]),
              ncclSuccess);
    ASSERT_EQ(ncclRecv(in[r].data(), 10, ncclInt64, (r + 2) % kRanks, w.comms[r], w.streams[r]),
              ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  }
  for (int r = 0; r < kRanks; ++r) ASSERT_EQ(cudaStreamSynchronize(w.streams[r]), cudaSuccess);
  EXPECT_EQ(grads[0][0], 18.0f);  // 1 + 2 + 3, then 6 x 3
  EXPECT_EQ(gathered[1][16 * 2], 2);
  EXPECT_EQ(in[0][0], 2);
  w.Destroy();
  std::vector<RsTestEvent> log = Log(w.plugin);
  ASSERT_FALSE(log.empty());

  // init: one per communicator, with NCCL's commHash of the id.
  const uint64_t hash = rs::NcclCommHash(w.id.internal, sizeof(w.id.internal));
  std::set<int> ranks, contexts;
  for (const RsTestEvent& e : log) {
    if (e.call != RsTestEvent::kInit) continue;
    EXPECT_EQ(e.comm_hash, hash);
    EXPECT_EQ(e.name, "rstest-world");
    EXPECT_EQ(e.n_nodes, 1);  // every rank on this host
    EXPECT_EQ(e.nranks, kRanks);
    EXPECT_TRUE(e.has_logger);
    ranks.insert(e.rank);
    contexts.insert(e.context);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2}));
  ASSERT_EQ(contexts.size(), 3u);

  // Rank 0's first AllReduce, on this thread, in NCCL's order.
  int rank0_ctx = -1;
  for (const RsTestEvent& e : log) {
    if (e.call == RsTestEvent::kInit && e.rank == 0) rank0_ctx = e.context;
  }
  std::vector<const RsTestEvent*> host;  // rank 0's events started on this thread
  for (const RsTestEvent& e : log) {
    if (e.tid == self && e.context == rank0_ctx && e.call == RsTestEvent::kStart)
      host.push_back(&e);
  }
  ASSERT_GE(host.size(), 6u);
  const RsTestEvent& group_api = *host[0];
  const RsTestEvent& coll_api = *host[1];
  const RsTestEvent& launch = *host[2];
  const RsTestEvent& group = *host[3];
  const RsTestEvent& coll = *host[4];
  EXPECT_EQ(group_api.type, ncclProfileGroupApi);
  EXPECT_EQ(group_api.group_depth, 1);  // the implicit group of one call
  EXPECT_EQ(coll_api.type, ncclProfileCollApi);
  EXPECT_EQ(coll_api.parent, group_api.handle);
  EXPECT_EQ(coll_api.func, "AllReduce");
  EXPECT_EQ(coll_api.count, count);
  EXPECT_EQ(coll_api.datatype, "ncclFloat32");
  EXPECT_EQ(coll_api.stream, static_cast<void*>(w.streams[0]));
  EXPECT_EQ(launch.type, ncclProfileKernelLaunch);
  EXPECT_EQ(launch.parent, group_api.handle);
  EXPECT_EQ(launch.stream, static_cast<void*>(w.streams[0]));
  EXPECT_EQ(group.type, ncclProfileGroup);
  EXPECT_EQ(coll.type, ncclProfileColl);
  EXPECT_EQ(coll.parent, coll_api.handle);
  EXPECT_EQ(coll.parent_group, group.handle);
  EXPECT_EQ(coll.rank, 0);
  EXPECT_EQ(coll.seq, 0u);
  EXPECT_EQ(coll.func, "AllReduce");
  EXPECT_EQ(coll.send, grads[0].data());
  EXPECT_EQ(coll.recv, grads[0].data());
  EXPECT_EQ(coll.count, count);
  EXPECT_EQ(coll.datatype, "ncclFloat32");
  EXPECT_EQ(coll.n_channels, 1);
  EXPECT_EQ(coll.algo, "RING");
  EXPECT_EQ(coll.proto, "SIMPLE");
  EXPECT_FALSE(coll.device_thread);
  // The GroupApi event's states, in order, before its stop.
  std::vector<int> group_api_states;
  for (const RsTestEvent& e : log) {
    if (e.call == RsTestEvent::kRecord && e.handle == group_api.handle) {
      group_api_states.push_back(e.state);
    }
  }
  EXPECT_EQ(group_api_states,
            (std::vector<int>{ncclProfilerGroupStartApiStop, ncclProfilerGroupEndApiStart}));

  // Sequence numbers per function: AllReduce 0, 1; AllGather 0 (moved as bytes).
  std::vector<uint64_t> ar_seqs;
  const RsTestEvent* ag = nullptr;
  for (const RsTestEvent* e : host) {
    if (e->type == ncclProfileColl && e->func == "AllReduce") ar_seqs.push_back(e->seq);
    if (e->type == ncclProfileColl && e->func == "AllGather") ag = e;
  }
  EXPECT_EQ(ar_seqs, (std::vector<uint64_t>{0, 1}));
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->seq, 0u);
  EXPECT_EQ(ag->datatype, "ncclInt8");
  EXPECT_EQ(ag->count, 16u * 4);

  // The user group: depth 2, a P2pApi and a P2p event per call, peers as given.
  int p2p = 0, p2p_api = 0, depth2 = 0;
  for (const RsTestEvent* e : host) {
    if (e->type == ncclProfileGroupApi && e->group_depth == 2) ++depth2;
    if (e->type == ncclProfileP2pApi) ++p2p_api;
    if (e->type == ncclProfileP2p) {
      ++p2p;
      const RsTestEvent* api = FindStart(log, e->parent);
      ASSERT_NE(api, nullptr);
      EXPECT_EQ(api->type, ncclProfileP2pApi);
      EXPECT_EQ(e->root, e->func == "Send" ? 1 : 2);
      EXPECT_EQ(e->count, 10u);
      EXPECT_EQ(e->datatype, "ncclInt64");
    }
  }
  EXPECT_EQ(depth2, 1);
  EXPECT_EQ(p2p_api, 2);
  EXPECT_EQ(p2p, 2);

  // The device: the first AllReduce's channel with the device's clock, its network work.
  const RsTestEvent* channel = nullptr;
  std::vector<const RsTestEvent*> ops;
  for (const RsTestEvent& e : log) {
    if (e.call != RsTestEvent::kStart || e.parent != coll.handle) continue;
    if (e.type == ncclProfileKernelCh) channel = &e;
    if (e.type == ncclProfileProxyOp) ops.push_back(&e);
  }
  ASSERT_NE(channel, nullptr);
  EXPECT_TRUE(channel->device_thread);
  EXPECT_NE(channel->tid, self);
  EXPECT_EQ(channel->channel, 0);
  EXPECT_GE(channel->ptimer, coll.globaltimer);  // started after it was enqueued
  EXPECT_LE(channel->ptimer, channel->globaltimer);
  uint64_t stop_ptimer = 0;
  for (const RsTestEvent& e : log) {
    if (e.call == RsTestEvent::kRecord && e.handle == channel->handle) {
      EXPECT_EQ(e.state, ncclProfilerKernelChStop);
      stop_ptimer = e.ptimer;
    }
  }
  EXPECT_GE(stop_ptimer, channel->ptimer);
  ASSERT_EQ(ops.size(), 2u);  // send to the next rank, receive from the previous
  for (const RsTestEvent* op : ops) {
    EXPECT_EQ(op->pid, getpid());
    EXPECT_EQ(op->n_steps, 2 * (kRanks - 1));
    EXPECT_EQ(op->root, op->is_send ? 1 : 2);
    std::vector<int> steps;
    size_t bytes = 0;
    std::multiset<int> states;
    for (const RsTestEvent& e : log) {
      if (e.call == RsTestEvent::kStart && e.parent == op->handle) {
        EXPECT_EQ(e.type, ncclProfileProxyStep);
        steps.push_back(e.step);
        for (const RsTestEvent& r : log) {
          if (r.call == RsTestEvent::kRecord && r.handle == e.handle) {
            states.insert(r.state);
            if (r.state ==
                (op->is_send ? ncclProfilerProxyStepSendWait : ncclProfilerProxyStepRecvWait)) {
              bytes += r.trans_size;
            }
          }
        }
      }
    }
    EXPECT_EQ(steps, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(bytes, 4 * (count / kRanks) * sizeof(float));
    if (op->is_send) {
      EXPECT_EQ(states.count(ncclProfilerProxyStepSendGPUWait), 4u);
      EXPECT_EQ(states.count(ncclProfilerProxyStepSendWait), 4u);
    } else {
      EXPECT_EQ(states.count(ncclProfilerProxyStepRecvFlushWait), 4u);
      EXPECT_EQ(states.count(ncclProfilerProxyStepRecvGPUWait), 4u);
    }
  }

  // finalize once per context, and nothing left open.
  std::set<int> finalized;
  for (const RsTestEvent& e : log) {
    if (e.call == RsTestEvent::kFinalize) {
      EXPECT_TRUE(finalized.insert(e.context).second);
    }
  }
  EXPECT_EQ(finalized, contexts);
  ExpectEveryStartStoppedOnce(log);
}

// CUDA graphs, as NCCL 2.28+ reports them: the captured calls' API events say graphCaptured
// and the capture records the kernel launch and runs nothing; each replay's host node starts
// the Group and Coll events, whose parent is the captured call's API event, on the device's
// thread, and (KernelCh in the mask) NCCL's sequence number counts every replay.
TEST(NcclProfiler, GraphReplaysStartTheirTasksUnderTheCapturedCalls) {
  World w;
  ASSERT_TRUE(Join(&w, Env("RSTEST_PLUGIN_V5")));
  const size_t first = Log(w.plugin).size();
  std::vector<std::vector<float>> grads(kRanks);
  std::vector<cudaGraphExec_t> execs(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    grads[r].assign(300, static_cast<float>(r + 1));
    ASSERT_EQ(cudaStreamBeginCapture(w.streams[r], cudaStreamCaptureModeGlobal), cudaSuccess);
    for (int k = 0; k < 2; ++k) {
      ASSERT_EQ(ncclAllReduce(grads[r].data(), grads[r].data(), 300, ncclFloat32, ncclSum,
                              w.comms[r], w.streams[r]),
                ncclSuccess);
    }
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(w.streams[r], &graph), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&execs[r], graph, 0), cudaSuccess);
    ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  }
  const size_t captured = Log(w.plugin).size();
  for (int replay = 0; replay < 3; ++replay) {
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_EQ(cudaGraphLaunch(execs[r], w.streams[r]), cudaSuccess);
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(cudaStreamSynchronize(w.streams[r]), cudaSuccess);
    ASSERT_EQ(cudaGraphExecDestroy(execs[r]), cudaSuccess);
  }
  EXPECT_EQ(grads[0][0], 1458.0f);  // 6, then x3 in each of the five all-reduces after it
  w.Destroy();
  std::vector<RsTestEvent> all = Log(w.plugin);
  std::vector<RsTestEvent> log(all.begin() + static_cast<std::ptrdiff_t>(first), all.end());
  std::map<uint64_t, int> at_capture;                    // started before the first replay, by type
  std::map<int, std::vector<const RsTestEvent*>> colls;  // by context
  std::map<int, const RsTestEvent*> api;                 // by handle
  for (size_t i = 0; i < log.size(); ++i) {
    const RsTestEvent& e = log[i];
    if (e.call != RsTestEvent::kStart) continue;
    if (first + i < captured) ++at_capture[e.type];
    if (e.type == ncclProfileCollApi) {
      EXPECT_TRUE(e.graph_captured);
      api[e.handle] = &e;
    }
    if (e.type == ncclProfileGroupApi) {
      EXPECT_TRUE(e.graph_captured);
    }
    if (e.type == ncclProfileColl) colls[e.context].push_back(&e);
  }
  EXPECT_EQ(at_capture, (std::map<uint64_t, int>{{ncclProfileGroupApi, 2 * kRanks},
                                                 {ncclProfileCollApi, 2 * kRanks},
                                                 {ncclProfileKernelLaunch, 2 * kRanks}}));
  ASSERT_EQ(colls.size(), static_cast<size_t>(kRanks));
  for (const auto& [context, list] : colls) {
    ASSERT_EQ(list.size(), 6u);  // 2 per replay
    std::set<int> parents;
    for (size_t k = 0; k < list.size(); ++k) {
      EXPECT_TRUE(list[k]->device_thread);  // the graph's host node, as the stream reaches it
      EXPECT_EQ(list[k]->seq, k);
      auto parent = api.find(list[k]->parent);
      ASSERT_NE(parent, api.end());
      EXPECT_EQ(parent->second->context, context);
      parents.insert(list[k]->parent);
    }
    EXPECT_EQ(parents.size(), 2u);  // the two captured calls, at every replay
    EXPECT_EQ(list[0]->parent, list[2]->parent);
  }
  ExpectEveryStartStoppedOnce(log);
}

TEST(NcclProfiler, V4GetsNoApiEventsAndCollUnderTheGroup) {
  World w;
  ASSERT_TRUE(Join(&w, Env("RSTEST_PLUGIN_V4")));
  std::vector<std::vector<float>> bufs(kRanks, std::vector<float>(300, 1.0f));
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(ncclAllReduce(bufs[r].data(), bufs[r].data(), 300, ncclFloat32, ncclSum, w.comms[r],
                            w.streams[r]),
              ncclSuccess);
  }
  for (int r = 0; r < kRanks; ++r) ASSERT_EQ(cudaStreamSynchronize(w.streams[r]), cudaSuccess);
  w.Destroy();
  std::vector<RsTestEvent> log = Log(w.plugin);
  const uint64_t hash = rs::NcclCommHash(w.id.internal, sizeof(w.id.internal));
  int inits = 0;
  std::map<uint64_t, int> starts;  // by type
  for (const RsTestEvent& e : log) {
    if (e.call == RsTestEvent::kInit) {
      ++inits;
      EXPECT_EQ(e.comm_hash, hash);  // init's arguments in v4's order
      EXPECT_EQ(e.nranks, kRanks);
    }
    if (e.call != RsTestEvent::kStart) continue;
    ++starts[e.type];
    if (e.type == ncclProfileColl) {
      const RsTestEvent* parent = FindStart(log, e.parent);
      ASSERT_NE(parent, nullptr);
      EXPECT_EQ(parent->type, ncclProfileGroup);
    }
    if (e.type == ncclProfileKernelCh) {
      EXPECT_GT(e.ptimer, 0u);
    }
  }
  // Only v4's types: an API event (type >= 256) would arrive as a one-byte type, 0 or other.
  const std::map<uint64_t, int> want = {{ncclProfileGroup, kRanks},
                                        {ncclProfileColl, kRanks},
                                        {ncclProfileKernelCh, kRanks},
                                        {ncclProfileProxyOp, 2 * kRanks},
                                        {ncclProfileProxyStep, 2 * kRanks * 2 * (kRanks - 1)}};
  EXPECT_EQ(starts, want);
  EXPECT_EQ(inits, kRanks);
  ExpectEveryStartStoppedOnce(log);
}

// How the plugin is found, in fresh processes: "none" loads nothing; a bare name is looked up
// as libnccl-profiler-NAME.so on the library path.
int ChildLoads(const char* setting, const std::string& path) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("NCCL_PROFILER_PLUGIN", setting, 1);
    setenv("RANKSCOPE_TESTLIB_NO_PEERS", "1", 1);
    ncclUniqueId id{};
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, 2, id, 1) != ncclSuccess) _exit(2);
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    _exit(h != nullptr ? 1 : 0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(NcclProfiler, PluginIsFoundAsNcclFindsIt) {
  const std::string v5 = Env("RSTEST_PLUGIN_V5");
  EXPECT_EQ(ChildLoads("none", v5), 0);
  EXPECT_EQ(ChildLoads("rstest", v5), 1);  // libnccl-profiler-rstest.so via LD_LIBRARY_PATH
  EXPECT_EQ(ChildLoads(v5.c_str(), v5), 1);
  EXPECT_EQ(ChildLoads("no-such-plugin", v5), 0);
}

}  // namespace
