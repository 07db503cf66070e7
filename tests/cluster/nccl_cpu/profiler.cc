#include "profiler.h"

#include <dlfcn.h>
#include <strings.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "rscore/nccl_profiler_adapters.h"

namespace ncclcpu {
namespace {

std::mutex g_mu;
void* g_lib = nullptr;
int g_refs = 0;
bool g_failed = false;  // looked and found none (or "none"): not looked for again
std::atomic<const ncclProfiler_v7_t*> g_v7{nullptr};
std::atomic<const ncclProfiler_v6_t*> g_v6{nullptr};
std::atomic<const ncclProfiler_v5_t*> g_v5{nullptr};
std::atomic<const ncclProfiler_v4_t*> g_v4{nullptr};
// The newest profiler API this library knows (NCCL 2.31: 7). RANKSCOPE_TESTLIB_PROFILER_API
// makes it an older NCCL's: 6 (2.29-2.30), 5 (2.28), 4 (2.27).
int NewestApi() {
  const char* v = std::getenv("RANKSCOPE_TESTLIB_PROFILER_API");
  const int n = v != nullptr ? std::atoi(v) : 7;
  return n >= 4 && n <= 7 ? n : 7;
}
int g_mask = 0;  // written by the plugin's init through the pointer NCCL passes

int DebugLevel() {
  const char* d = std::getenv("NCCL_DEBUG");
  if (d == nullptr) return 0;
  if (strcasecmp(d, "VERSION") == 0) return 1;
  if (strcasecmp(d, "WARN") == 0) return 2;
  if (strcasecmp(d, "INFO") == 0) return 3;
  if (strcasecmp(d, "TRACE") == 0) return 5;
  return 0;
}

void Info(const std::string& text) {
  if (DebugLevel() >= 3) std::fprintf(stderr, "nccl-cpu: PROFILER/Plugin: %s\n", text.c_str());
}

// The logger handed to the plugin (NCCL passes its ncclDebugLog).
void PluginLog(int level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  (void)flags;
  if (level <= 0 || level > DebugLevel() || fmt == nullptr) return;
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "nccl-cpu: %s:%d %s\n", file != nullptr ? file : "?", line, text);
}

void* TryOpen(const std::string& name) {
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) Info(name + ": " + dlerror());
  return h;
}

// NCCL's search: NCCL_PROFILER_PLUGIN as given (a path or a library name), then, for a bare
// name that is neither a path nor "lib...so", libnccl-profiler-NAME.so; unset: libnccl-profiler.so.
void* OpenPlugin() {
  const char* env = std::getenv("NCCL_PROFILER_PLUGIN");
  if (env != nullptr && strcasecmp(env, "none") == 0) return nullptr;
  std::string name = env != nullptr && *env != '\0' ? env : "libnccl-profiler.so";
  if (void* h = TryOpen(name)) return h;
  if (env == nullptr || *env == '\0' || std::strchr(env, '/') != nullptr) return nullptr;
  size_t len = std::strlen(env);
  bool lib_so =
      std::strncmp(env, "lib", 3) == 0 && len >= 3 && std::strcmp(env + len - 3, ".so") == 0;
  if (lib_so) return nullptr;
  return TryOpen(std::string("libnccl-profiler-") + env + ".so");
}

// Takes a reference on the plugin library, loading it on first use.
bool Load() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_lib != nullptr) {
    ++g_refs;
    return true;
  }
  if (g_failed) return false;
  void* lib = OpenPlugin();
  if (lib == nullptr) {
    g_failed = true;
    return false;
  }
  // The newest table first, as NCCL's ncclProfilerPluginLoad.
  const int newest = NewestApi();
  auto* v7 = static_cast<const ncclProfiler_v7_t*>(dlsym(lib, "ncclProfiler_v7"));
  auto* v6 = static_cast<const ncclProfiler_v6_t*>(dlsym(lib, "ncclProfiler_v6"));
  auto* v5 = static_cast<const ncclProfiler_v5_t*>(dlsym(lib, "ncclProfiler_v5"));
  auto* v4 = static_cast<const ncclProfiler_v4_t*>(dlsym(lib, "ncclProfiler_v4"));
  if (v7 != nullptr && newest >= 7) {
    g_v7 = v7;
    Info(std::string("loaded ") + (v7->name ? v7->name : "?") + " (v7)");
  } else if (v6 != nullptr && newest >= 6) {
    g_v6 = v6;
    Info(std::string("loaded ") + (v6->name ? v6->name : "?") + " (v6)");
  } else if (v5 != nullptr && newest >= 5) {
    g_v5 = v5;
    Info(std::string("loaded ") + (v5->name ? v5->name : "?") + " (v5)");
  } else if (v4 != nullptr) {
    g_v4 = v4;
    Info(std::string("loaded ") + (v4->name ? v4->name : "?") + " (v4)");
  } else {
    Info("the library has no ncclProfiler_v7, _v6, _v5 or _v4 this NCCL knows: unsupported");
    dlclose(lib);
    g_failed = true;
    return false;
  }
  g_lib = lib;
  g_refs = 1;
  return true;
}

void Unload() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_lib == nullptr || --g_refs > 0) return;
  g_v7 = nullptr;
  g_v6 = nullptr;
  g_v5 = nullptr;
  g_v4 = nullptr;
  dlclose(g_lib);
  g_lib = nullptr;  // a later communicator loads it again, as NCCL does
}

// startEvent through whichever version is loaded, the event passed down by NCCL's adapters
// (rscore/nccl_profiler.h); *handle stays null when nothing started.
void Start(void* ctx, void** handle, ncclProfilerEventDescr_v7_t* d) {
  *handle = nullptr;
  if (ctx == nullptr) return;
  ncclProfilerEventDescr_v6_t o6;
  ncclProfilerEventDescr_v5_t o5;
  ncclProfilerEventDescr_v4_t o4;
  if (const ncclProfiler_v7_t* v7 = g_v7.load()) {
    v7->startEvent(ctx, handle, d);
  } else if (!rs::NcclProfilerDescrV6(*d, &o6)) {
    return;
  } else if (const ncclProfiler_v6_t* v6 = g_v6.load()) {
    v6->startEvent(ctx, handle, &o6);
  } else if (!rs::NcclProfilerDescrV5(o6, &o5)) {
    return;
  } else if (const ncclProfiler_v5_t* v5 = g_v5.load()) {
    v5->startEvent(ctx, handle, &o5);
  } else if (const ncclProfiler_v4_t* v4 = g_v4.load()) {
    // NCCL's v4 adapter: only these types are passed
    if (rs::NcclProfilerDescrV4(o5, &o4)) v4->startEvent(ctx, handle, &o4);
  }
}

void Record(void* handle, ncclProfilerEventState_t state, ncclProfilerEventStateArgs_v5_t* args) {
  if (handle == nullptr) return;
  if (const ncclProfiler_v7_t* v7 = g_v7.load()) {
    v7->recordEventState(handle, state, args);
    return;
  }
  if (state == ncclProfilerKernelPhaseStop) return;  // v6 and older have no kernel phases
  if (const ncclProfiler_v6_t* v6 = g_v6.load()) {
    v6->recordEventState(handle, state, args);
    return;
  }
  if (const ncclProfiler_v5_t* v5 = g_v5.load()) {
    v5->recordEventState(handle, state, args);
    return;
  }
  const ncclProfiler_v4_t* v4 = g_v4.load();
  if (v4 == nullptr) return;
  switch (state) {  // the states NCCL's v4 adapter passes on
    case ncclProfilerProxyOpInProgress_v4:
    case ncclProfilerProxyStepSendGPUWait:
    case ncclProfilerProxyStepSendPeerWait_v4:
    case ncclProfilerProxyStepSendWait:
    case ncclProfilerProxyStepRecvWait:
    case ncclProfilerProxyStepRecvFlushWait:
    case ncclProfilerProxyStepRecvGPUWait:
    case ncclProfilerNetPluginUpdate:
    case ncclProfilerKernelChStop:
    case ncclProfilerProxyCtrlIdle:
    case ncclProfilerProxyCtrlActive:
    case ncclProfilerProxyCtrlSleep:
    case ncclProfilerProxyCtrlWakeup:
    case ncclProfilerProxyCtrlAppend:
    case ncclProfilerProxyCtrlAppendEnd:
      v4->recordEventState(handle, state, args);
      break;
    default:
      break;
  }
}

ncclProfilerEventDescr_v7_t Descr(uint64_t type) {
  ncclProfilerEventDescr_v7_t d;
  std::memset(&d, 0, sizeof(d));  // NCCL zero-initializes: unset fields (often rank) are 0
  d.type = type;
  return d;
}

thread_local ApiState tls_api;

}  // namespace

const char* FuncName(Func f) {
  switch (f) {
    case kBroadcast:
      return "Broadcast";
    case kReduce:
      return "Reduce";
    case kAllGather:
      return "AllGather";
    case kReduceScatter:
      return "ReduceScatter";
    case kAllReduce:
      return "AllReduce";
    case kSend:
      return "Send";
    case kRecv:
      return "Recv";
  }
  return "Unknown";
}

const char* DatatypeName(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return "ncclInt8";
    case ncclInt32:
      return "ncclInt32";
    case ncclUint32:
      return "ncclUint32";
    case ncclInt64:
      return "ncclInt64";
    case ncclUint64:
      return "ncclUint64";
    case ncclFloat16:
      return "ncclFloat16";
    case ncclFloat32:
      return "ncclFloat32";
    case ncclFloat64:
      return "ncclFloat64";
    case ncclBfloat16:
      return "ncclBfloat16";
    case ncclFloat8e4m3:
      return "ncclFloat8e4m3";
    case ncclFloat8e5m2:
      return "ncclFloat8e5m2";
    default:
      return "Unknown";
  }
}

void ProfilerInit(ncclComm* comm) {
  if (!Load()) return;
  comm->profiler_ref = true;
  void* ctx = nullptr;
  int err = 0;
  const char* name = comm->name.empty() ? nullptr : comm->name.c_str();
  if (const ncclProfiler_v7_t* v7 = g_v7.load()) {
    err = v7->init(&ctx, comm->comm_hash, &g_mask, name, comm->n_nodes, comm->nranks, comm->rank,
                   PluginLog);
  } else if (const ncclProfiler_v6_t* v6 = g_v6.load()) {
    err = v6->init(&ctx, comm->comm_hash, &g_mask, name, comm->n_nodes, comm->nranks, comm->rank,
                   PluginLog);
  } else if (const ncclProfiler_v5_t* v5 = g_v5.load()) {
    err = v5->init(&ctx, comm->comm_hash, &g_mask, name, comm->n_nodes, comm->nranks, comm->rank,
                   PluginLog);
  } else if (const ncclProfiler_v4_t* v4 = g_v4.load()) {
    err = v4->init(&ctx, &g_mask, name, comm->comm_hash, comm->n_nodes, comm->nranks, comm->rank,
                   PluginLog);
  }
  // NCCL 2.31 turns KernelCh on with KernelPhase (ncclProfilerEnforceMaskDeps).
  if (g_v7.load() != nullptr && (g_mask & ncclProfileKernelPhase)) g_mask |= ncclProfileKernelCh;
  if (err != 0) {
    Info("init failed with error " + std::to_string(err) + ": no profiling of this communicator");
    ctx = nullptr;
  }
  comm->profiler_context = ctx;
}

void ProfilerFinalize(ncclComm* comm) {
  if (!comm->profiler_ref) return;
  if (comm->profiler_context != nullptr) {
    if (const ncclProfiler_v7_t* v7 = g_v7.load()) {
      v7->finalize(comm->profiler_context);
    } else if (const ncclProfiler_v6_t* v6 = g_v6.load()) {
      v6->finalize(comm->profiler_context);
    } else if (const ncclProfiler_v5_t* v5 = g_v5.load()) {
      v5->finalize(comm->profiler_context);
    } else if (const ncclProfiler_v4_t* v4 = g_v4.load()) {
      v4->finalize(comm->profiler_context);
    }
    comm->profiler_context = nullptr;
  }
  comm->profiler_ref = false;
  Unload();
}

bool ProfilerLoaded() {
  return g_v7.load() != nullptr || g_v6.load() != nullptr || g_v5.load() != nullptr ||
         g_v4.load() != nullptr;
}

int ProfilerApi() {
  if (g_v7.load() != nullptr) return 7;
  if (g_v6.load() != nullptr) return 6;
  if (g_v5.load() != nullptr) return 5;
  return g_v4.load() != nullptr ? 4 : 0;
}

int ProfilerMask() { return __atomic_load_n(&g_mask, __ATOMIC_RELAXED); }

ApiState& Api() { return tls_api; }

// NCCL starts the GroupApi event at the first operation of the outermost group; group_depth
// is 1 for the implicit group of a single call, more inside ncclGroupStart.
void StartGroupApiEvent(ncclComm* comm, int group_depth, bool graph_captured) {
  ApiState& a = tls_api;
  a.mask = ProfilerMask();
  constexpr int kGroupApiMask = ncclProfileGroupApi | ncclProfileP2pApi | ncclProfileCollApi |
                                ncclProfileKernelLaunch | kGroupMask;
  if (!ProfilerLoaded() || (a.mask & kGroupApiMask) == 0 || a.profiler_group_depth != 0) return;
  ncclProfilerEventDescr_v7_t d = Descr(ncclProfileGroupApi);
  d.groupApi.graphCaptured = graph_captured;
  d.groupApi.groupDepth = group_depth;
  Start(comm->profiler_context, &a.group_api, &d);
  a.profiler_group_depth = group_depth;
  a.state = ApiState::kStarted;
}

void RecordGroupApiEventState(ncclProfilerEventState_t state) {
  ApiState& a = tls_api;
  bool record = false;
  if (state == ncclProfilerGroupStartApiStop && a.state == ApiState::kStarted) {
    a.state = ApiState::kStartReturned;
    record = true;
  } else if (state == ncclProfilerGroupEndApiStart && a.state == ApiState::kStartReturned) {
    a.state = ApiState::kReset;
    record = true;
  }
  if (record && ProfilerLoaded()) Record(a.group_api, state, nullptr);
}

void StopGroupApiEvent() {
  ApiState& a = tls_api;
  if (a.group_api != nullptr && a.profiler_group_depth == 0) {
    StopEvent(a.group_api);
    a.group_api = nullptr;
  }
}

void StartCollApiEvent(ncclComm* comm, const CollApiArgs& args) {
  ApiState& a = tls_api;
  a.coll_api = nullptr;
  if (!ProfilerLoaded() || (a.mask & (ncclProfileCollApi | kCollTaskMask)) == 0) return;
  ncclProfilerEventDescr_v7_t d = Descr(ncclProfileCollApi);
  d.parentObj = a.group_api;
  d.collApi.func = FuncName(args.func);
  d.collApi.count = args.count;
  d.collApi.datatype = DatatypeName(args.datatype);
  d.collApi.root = args.root;
  d.collApi.stream = args.stream;
  d.collApi.graphCaptured = args.graph_captured;
  d.collApi.userTag = args.user_tag;
  Start(comm->profiler_context, &a.coll_api, &d);
}

void StopCollApiEvent() { StopEvent(tls_api.coll_api); }

void StartP2pApiEvent(ncclComm* comm, const CollApiArgs& args) {
  ApiState& a = tls_api;
  a.p2p_api = nullptr;
  if (!ProfilerLoaded() || (a.mask & (ncclProfileP2pApi | kP2pTaskMask)) == 0) return;
  ncclProfilerEventDescr_v7_t d = Descr(ncclProfileP2pApi);
  d.parentObj = a.group_api;
  d.p2pApi.func = FuncName(args.func);
  d.p2pApi.count = args.count;
  d.p2pApi.datatype = DatatypeName(args.datatype);
  d.p2pApi.stream = args.stream;
  d.p2pApi.graphCaptured = args.graph_captured;
  d.p2pApi.userTag = args.user_tag;
  Start(comm->profiler_context, &a.p2p_api, &d);
}

void StopP2pApiEvent() {
  StopEvent(tls_api.p2p_api);
  tls_api.p2p_api = nullptr;
}

void* StartKernelLaunchEvent(ncclComm* comm, void* group_api, cudaStream_t stream) {
  ncclProfilerEventDescr_v7_t d = Descr(ncclProfileKernelLaunch);
  d.parentObj = group_api;
  d.kernelLaunch.stream = stream;
  void* h = nullptr;
  Start(comm->profiler_context, &h, &d);
  return h;
}

void* StartGroupEvent(ncclComm* comm) {
  ncclProfilerEventDescr_v7_t d = Descr(ncclProfileGroup);
  void* h = nullptr;
  Start(comm->profiler_context, &h, &d);
  return h;
}

void* StartCollEvent(ncclComm* comm, const CollArgs& a) {
  ncclProfilerEventDescr_v7_t d = Descr(ncclProfileColl);
  d.parentObj = a.coll_api;
  d.rank = comm->rank;
  d.coll.seqNumber = a.seq_number;
  d.coll.func = FuncName(a.func);
  d.coll.sendBuff = a.send;
  d.coll.recvBuff = a.recv;
  d.coll.count = a.count;
  d.coll.root = a.root;
  d.coll.datatype = DatatypeName(a.datatype);
  d.coll.nChannels = 1;  // one ring: one channel
  d.coll.nWarps = 16;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  d.coll.parentGroup = a.group;
  d.coll.kernelVariant = a.symmetric ? "symmetric" : "default";
  d.coll.isSymColl = a.symmetric;
  d.coll.userTag = a.user_tag;
  void* h = nullptr;
  Start(comm->profiler_context, &h, &d);
  return h;
}

void* StartP2pEvent(ncclComm* comm, const P2pArgs& a) {
  ncclProfilerEventDescr_v7_t d = Descr(ncclProfileP2p);
  d.parentObj = a.p2p_api;
  d.rank = comm->rank;
  d.p2p.func = FuncName(a.func);
  d.p2p.buff = a.buff;
  d.p2p.datatype = DatatypeName(a.datatype);
  d.p2p.count = a.count;
  d.p2p.peer = a.peer;
  d.p2p.nChannels = 1;
  d.p2p.parentGroup = a.group;
  d.p2p.userTag = a.user_tag;
  void* h = nullptr;
  Start(comm->profiler_context, &h, &d);
  return h;
}

void* StartKernelChEvent(ncclComm* comm, void* task, uint64_t start_ptimer) {
  ncclProfilerEventDescr_v7_t d = Descr(ncclProfileKernelCh);  // rank stays 0, as in NCCL
  d.parentObj = task;
  d.kernelCh.channelId = 0;
  d.kernelCh.pTimer = start_ptimer;
  void* h = nullptr;
  Start(comm->profiler_context, &h, &d);
  return h;
}

void KernelPhaseEvent(ncclComm* comm, void* channel, uint8_t phase, uint64_t start, uint64_t stop) {
  static const char* const kNames[] = {"initial_sync", "compute", "final_sync"};
  if (channel == nullptr || phase > 2 || start == 0 || stop <= start) return;  // as NCCL
  ncclProfilerEventDescr_v7_t d = Descr(ncclProfileKernelPhase);
  d.parentObj = channel;
  d.kernelPhase.channelId = 0;
  d.kernelPhase.phaseId = phase;
  d.kernelPhase.phaseName = kNames[phase];
  d.kernelPhase.pTimer = start;
  void* h = nullptr;
  Start(comm->profiler_context, &h, &d);
  if (h == nullptr) return;
  ncclProfilerEventStateArgs_v5_t args;
  std::memset(&args, 0, sizeof(args));
  args.kernelCh.pTimer = stop;
  Record(h, ncclProfilerKernelPhaseStop, &args);
  StopEvent(h);
}

void StopKernelChEvent(void* handle, uint64_t stop_ptimer) {
  if (handle == nullptr) return;
  ncclProfilerEventStateArgs_v5_t args;
  std::memset(&args, 0, sizeof(args));
  args.kernelCh.pTimer = stop_ptimer;
  Record(handle, ncclProfilerKernelChStop, &args);
  StopEvent(handle);
}

void* StartProxyOpEvent(ncclComm* comm, void* task, int peer, int n_steps, int chunk_size,
                        bool is_send) {
  ncclProfilerEventDescr_v7_t d = Descr(ncclProfileProxyOp);
  d.parentObj = task;
  d.rank = comm->rank;
  d.proxyOp.pid = getpid();
  d.proxyOp.channelId = 0;
  d.proxyOp.peer = peer;
  d.proxyOp.nSteps = n_steps;
  d.proxyOp.chunkSize = chunk_size;
  d.proxyOp.isSend = is_send ? 1 : 0;
  void* h = nullptr;
  Start(comm->profiler_context, &h, &d);
  return h;
}

void* StartProxyStepEvent(ncclComm* comm, void* op, int step) {
  ncclProfilerEventDescr_v7_t d = Descr(ncclProfileProxyStep);
  d.parentObj = op;
  d.rank = comm->rank;
  d.proxyStep.step = step;
  void* h = nullptr;
  Start(comm->profiler_context, &h, &d);
  return h;
}

void RecordProxyStepEventState(void* handle, ncclProfilerEventState_t state, size_t trans_size) {
  if (handle == nullptr) return;
  ncclProfilerEventStateArgs_v5_t args;
  std::memset(&args, 0, sizeof(args));
  args.proxyStep.transSize = trans_size;
  Record(handle, state, &args);
}

void StopEvent(void* handle) {
  if (handle == nullptr) return;
  if (const ncclProfiler_v7_t* v7 = g_v7.load()) {
    v7->stopEvent(handle);
  } else if (const ncclProfiler_v6_t* v6 = g_v6.load()) {
    v6->stopEvent(handle);
  } else if (const ncclProfiler_v5_t* v5 = g_v5.load()) {
    v5->stopEvent(handle);
  } else if (const ncclProfiler_v4_t* v4 = g_v4.load()) {
    v4->stopEvent(handle);
  }
}

}  // namespace ncclcpu
