// A profiler plugin for the tests of the test bed's NCCL library: built against
// rscore/nccl_profiler.h (as rankscope's own plugin is), it logs every call with the
// descriptor's fields, the calling thread and the device clock, so a test can check what a
// plugin sees. Built twice: exporting ncclProfiler_v5, and (RSTEST_V4) only ncclProfiler_v4.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_runtime_api.h"
#include "rscore/nccl_profiler.h"
#include "test_profiler_log.h"

namespace {

std::mutex g_mu;
std::vector<RsTestEvent> g_log;
int g_next_handle = 0;
int g_contexts = 0;

std::string Str(const char* s) { return s != nullptr ? s : "(null)"; }

RsTestEvent& Add(RsTestEvent::Call call) {
  g_log.emplace_back();
  RsTestEvent& e = g_log.back();
  e.call = call;
  e.tid = static_cast<int>(syscall(SYS_gettid));
  e.device_thread = cudacpuCurrentWorkerDevice() >= 0;
  e.globaltimer = cudacpuGlobaltimer();
  return e;
}

void* NewHandle(RsTestEvent& e) {
  e.handle = ++g_next_handle;
  return reinterpret_cast<void*>(static_cast<intptr_t>(e.handle) << 4);
}

int HandleId(void* h) { return static_cast<int>(reinterpret_cast<intptr_t>(h) >> 4); }

int Init(void** ctx, uint64_t comm_hash, int* mask, const char* name, int nodes, int nranks,
         int rank, ncclDebugLogger_t log) {
  std::lock_guard<std::mutex> lock(g_mu);
  RsTestEvent& e = Add(RsTestEvent::kInit);
  e.comm_hash = comm_hash;
  e.name = name != nullptr ? name : "(null)";
  e.n_nodes = nodes;
  e.nranks = nranks;
  e.rank = rank;
  e.has_logger = log != nullptr;
  *mask = RSTEST_MASK;
  *ctx = reinterpret_cast<void*>(static_cast<intptr_t>(++g_contexts) << 8);
  e.context = g_contexts;
  return 0;
}

int Finalize(void* ctx) {
  std::lock_guard<std::mutex> lock(g_mu);
  Add(RsTestEvent::kFinalize).context = static_cast<int>(reinterpret_cast<intptr_t>(ctx) >> 8);
  return 0;
}

int Stop(void* h) {
  std::lock_guard<std::mutex> lock(g_mu);
  Add(RsTestEvent::kStop).handle = HandleId(h);
  return 0;
}

int Record(void* h, ncclProfilerEventState_t state, ncclProfilerEventStateArgs_v5_t* args) {
  std::lock_guard<std::mutex> lock(g_mu);
  RsTestEvent& e = Add(RsTestEvent::kRecord);
  e.handle = HandleId(h);
  e.state = state;
  if (args != nullptr) {
    e.ptimer = args->kernelCh.pTimer;  // the union's first 8 bytes: also transSize
    e.trans_size = args->proxyStep.transSize;
  }
  return 0;
}

// Both descriptor versions share these fields' meaning; the type-specific ones are copied.
template <typename D>
void Common(RsTestEvent& e, const D* d, void* ctx) {
  e.context = static_cast<int>(reinterpret_cast<intptr_t>(ctx) >> 8);
  e.type = d->type;
  e.parent = HandleId(d->parentObj);
  e.rank = d->rank;
  switch (d->type) {
    case ncclProfileColl:
      e.seq = d->coll.seqNumber;
      e.func = Str(d->coll.func);
      e.send = d->coll.sendBuff;
      e.recv = d->coll.recvBuff;
      e.count = d->coll.count;
      e.root = d->coll.root;
      e.datatype = Str(d->coll.datatype);
      e.n_channels = d->coll.nChannels;
      e.algo = Str(d->coll.algo);
      e.proto = Str(d->coll.proto);
      break;
    case ncclProfileP2p:
      e.func = Str(d->p2p.func);
      e.recv = d->p2p.buff;
      e.count = d->p2p.count;
      e.datatype = Str(d->p2p.datatype);
      e.root = d->p2p.peer;
      e.n_channels = d->p2p.nChannels;
      break;
    case ncclProfileProxyOp:
      e.pid = d->proxyOp.pid;
      e.channel = d->proxyOp.channelId;
      e.root = d->proxyOp.peer;
      e.n_steps = d->proxyOp.nSteps;
      e.chunk = d->proxyOp.chunkSize;
      e.is_send = d->proxyOp.isSend;
      break;
    case ncclProfileProxyStep:
      e.step = d->proxyStep.step;
      break;
    case ncclProfileKernelCh:
      e.channel = d->kernelCh.channelId;
      e.ptimer = d->kernelCh.pTimer;
      break;
    default:
      break;
  }
}

#ifndef RSTEST_V4
int StartV5(void* ctx, void** handle, ncclProfilerEventDescr_v5_t* d) {
  std::lock_guard<std::mutex> lock(g_mu);
  RsTestEvent& e = Add(RsTestEvent::kStart);
  Common(e, d, ctx);
  switch (d->type) {
    case ncclProfileGroupApi:
      e.group_depth = d->groupApi.groupDepth;
      e.graph_captured = d->groupApi.graphCaptured;
      break;
    case ncclProfileCollApi:
      e.func = Str(d->collApi.func);
      e.count = d->collApi.count;
      e.datatype = Str(d->collApi.datatype);
      e.root = d->collApi.root;
      e.stream = d->collApi.stream;
      e.graph_captured = d->collApi.graphCaptured;
      break;
    case ncclProfileP2pApi:
      e.func = Str(d->p2pApi.func);
      e.count = d->p2pApi.count;
      e.datatype = Str(d->p2pApi.datatype);
      e.stream = d->p2pApi.stream;
      e.graph_captured = d->p2pApi.graphCaptured;
      break;
    case ncclProfileKernelLaunch:
      e.stream = d->kernelLaunch.stream;
      break;
    case ncclProfileColl:
      e.parent_group = HandleId(d->coll.parentGroup);
      break;
    case ncclProfileP2p:
      e.parent_group = HandleId(d->p2p.parentGroup);
      break;
    default:
      break;
  }
  *handle = NewHandle(e);
  return 0;
}
#endif

int StartV4(void* ctx, void** handle, ncclProfilerEventDescr_v4_t* d) {
  std::lock_guard<std::mutex> lock(g_mu);
  RsTestEvent& e = Add(RsTestEvent::kStart);
  Common(e, d, ctx);
  *handle = NewHandle(e);
  return 0;
}

int InitV4(void** ctx, int* mask, const char* name, uint64_t comm_hash, int nodes, int nranks,
           int rank, ncclDebugLogger_t log) {
  return Init(ctx, comm_hash, mask, name, nodes, nranks, rank, log);
}

}  // namespace

extern "C" {

#ifndef RSTEST_V4
__attribute__((visibility("default")))
ncclProfiler_v5_t ncclProfiler_v5 = {"rstest-v5", Init, StartV5, Stop, Record, Finalize};
#endif
__attribute__((visibility("default")))
ncclProfiler_v4_t ncclProfiler_v4 = {"rstest-v4", InitV4, StartV4, Stop, Record, Finalize};

__attribute__((visibility("default"))) size_t rstest_profiler_events(RsTestEvent* out, size_t max) {
  std::lock_guard<std::mutex> lock(g_mu);
  size_t n = g_log.size() < max ? g_log.size() : max;
  for (size_t i = 0; i < n; ++i) out[i] = g_log[i];
  return g_log.size();
}

}  // extern "C"
