// NCCL's profiler plugin interface, driven the way NCCL 2.31 drives it: the plugin library is
// found as NCCL does (NCCL_PROFILER_PLUGIN as a path or a name, "none" to disable, else
// libnccl-profiler.so), `ncclProfiler_v7` is looked up first, then _v6, _v5 and _v4 (to which
// the events are passed down as NCCL's adapters do: no kernel phases or user tags below v7, no
// copy-engine events below v6, no API events in v4); RANKSCOPE_TESTLIB_PROFILER_API=N makes it
// an older NCCL that knows versions up to N. Init per communicator, then the events below,
// finalize when the communicator is freed. Calls happen on the thread NCCL would make them on:
// API, Group and Coll/P2p events on the calling host thread; KernelCh (with v7's KernelPhase
// events before its stop), ProxyOp and ProxyStep events on the device (the stream worker that
// runs the collective). Nothing here ever fails the caller.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm.h"
#include "rscore/nccl_profiler.h"

namespace ncclcpu {

// NCCL's function ids (ncclFunc_t) and their names as NCCL passes them to plugins.
enum Func {
  kBroadcast = 0,
  kReduce = 1,
  kAllGather = 2,
  kReduceScatter = 3,
  kAllReduce = 4,
  kSend = 6,
  kRecv = 7
};
const char* FuncName(Func f);
// ncclDatatypeToString of NCCL 2.28 (which has no entry for ncclUint8: "Unknown").
const char* DatatypeName(ncclDataType_t t);

// Which events a task's activation mask asks for, as NCCL tests them: a Coll / P2p event, the
// Group event of a launch.
constexpr int kCollTaskMask = ncclProfileColl | ncclProfileProxyOp | ncclProfileProxyStep |
                              ncclProfileKernelCh | ncclProfileNetPlugin;
constexpr int kP2pTaskMask = ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep |
                             ncclProfileKernelCh | ncclProfileNetPlugin;
constexpr int kGroupMask = ncclProfileGroup | kCollTaskMask | kP2pTaskMask;

// Loads the plugin (once per process; reference-counted per communicator) and calls init.
void ProfilerInit(ncclComm* comm);
void ProfilerFinalize(ncclComm* comm);
bool ProfilerLoaded();
// The API version of the table in use (7-4), 0 when none is.
int ProfilerApi();
// The activation mask the plugin set at its latest init.
int ProfilerMask();

// ---- host thread: API events (thread-local state, as NCCL keeps it) ----
struct ApiState {
  enum GroupApiState { kReset, kStarted, kStartReturned };  // NCCL's GroupApi states
  int mask = 0;
  void* group_api = nullptr;
  void* coll_api = nullptr;
  void* p2p_api = nullptr;
  int profiler_group_depth = 0;
  GroupApiState state = kReset;
};
ApiState& Api();
void StartGroupApiEvent(ncclComm* comm, int group_depth, bool graph_captured);
void RecordGroupApiEventState(ncclProfilerEventState_t state);
void StopGroupApiEvent();
struct CollApiArgs {
  Func func;
  size_t count;
  ncclDataType_t datatype;
  int root;
  cudaStream_t stream;
  uint64_t user_tag = 0;        // v7: the call's ncclCollConfig_t.userProfilerTag
  bool graph_captured = false;  // its stream is being captured into a CUDA graph
};
void StartCollApiEvent(ncclComm* comm, const CollApiArgs& a);
void StopCollApiEvent();
void StartP2pApiEvent(ncclComm* comm, const CollApiArgs& a);
void StopP2pApiEvent();

// ---- host thread: the launch of one plan ----
void* StartKernelLaunchEvent(ncclComm* comm, void* group_api, cudaStream_t stream);
void* StartGroupEvent(ncclComm* comm);
struct CollArgs {
  Func func;
  uint64_t seq_number;
  const void* send;
  void* recv;
  size_t count;
  int root;
  ncclDataType_t datatype;
  void* coll_api;
  void* group;
  bool symmetric = false;  // v7: run by a symmetric kernel (an opening and a closing barrier)
  uint64_t user_tag = 0;
};
void* StartCollEvent(ncclComm* comm, const CollArgs& a);
struct P2pArgs {
  Func func;
  void* buff;
  size_t count;
  int peer;
  ncclDataType_t datatype;
  void* p2p_api;
  void* group;
  uint64_t user_tag = 0;
};
void* StartP2pEvent(ncclComm* comm, const P2pArgs& a);

// ---- device: one channel of the kernel, the network work of a channel and peer ----
void* StartKernelChEvent(ncclComm* comm, void* task, uint64_t start_ptimer);
void StopKernelChEvent(void* handle, uint64_t stop_ptimer);
// v7: one phase of a channel (0 initial_sync, 1 compute, 2 final_sync), reported just before
// the channel's stop; none where it has no length, as NCCL leaves those out.
void KernelPhaseEvent(ncclComm* comm, void* channel, uint8_t phase, uint64_t start, uint64_t stop);
void* StartProxyOpEvent(ncclComm* comm, void* task, int peer, int n_steps, int chunk_size,
                        bool is_send);
void* StartProxyStepEvent(ncclComm* comm, void* op, int step);
void RecordProxyStepEventState(void* handle, ncclProfilerEventState_t state, size_t trans_size);

// stopEvent for any handle (null: nothing).
void StopEvent(void* handle);

}  // namespace ncclcpu
