/* The NCCL profiler plugin interface, versions 5 (NCCL 2.28) and 4 (NCCL 2.27): the structs
 * NCCL passes to a plugin found as libnccl-profiler.so (or NCCL_PROFILER_PLUGIN), written
 * here with the same layouts, type names and enum values so that a plugin built against this
 * header is loaded by NCCL, and so that the test bed's NCCL library calls a plugin exactly as
 * NCCL does. Versions 1-3 are left out: they carry no device timestamps.
 *
 * A plugin exports a variable `ncclProfiler_v5` (and/or `ncclProfiler_v4`); NCCL looks the
 * newest one up first. Every function returns an ncclResult_t, written here as int (the
 * enum's size and values are those of nccl.h: 0 = ncclSuccess). Only `init` may return an
 * error (NCCL then runs without the plugin). C and C++. */
#ifndef RSCORE_NCCL_PROFILER_H_
#define RSCORE_NCCL_PROFILER_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Event types: the bits of the activation mask a plugin returns from init. */
enum {
  ncclProfileGroup = (1 << 0),        /* a launched group of operations (one plan) */
  ncclProfileColl = (1 << 1),         /* a collective as NCCL enqueues it */
  ncclProfileP2p = (1 << 2),          /* a send or receive as enqueued */
  ncclProfileProxyOp = (1 << 3),      /* the network work of one channel and peer */
  ncclProfileProxyStep = (1 << 4),    /* one network transfer of a ProxyOp */
  ncclProfileProxyCtrl = (1 << 5),    /* the proxy thread's own states */
  ncclProfileKernelCh = (1 << 6),     /* one channel of the kernel, device timestamps */
  ncclProfileNetPlugin = (1 << 7),    /* events defined by a network plugin */
  ncclProfileGroupApi = (1 << 8),     /* v5: ncclGroupStart/End as the user called them */
  ncclProfileCollApi = (1 << 9),      /* v5: a collective API call */
  ncclProfileP2pApi = (1 << 10),      /* v5: a send/recv API call */
  ncclProfileKernelLaunch = (1 << 11) /* v5: the kernel launch on the stream */
};

typedef enum {
  ncclProfilerProxyOpSendPosted = 0, /* 0-7: ProxyOp states of v1-v3, unused since v4 */
  ncclProfilerProxyOpSendRemFifoWait = 1,
  ncclProfilerProxyOpSendTransmitted = 2,
  ncclProfilerProxyOpSendDone = 3,
  ncclProfilerProxyOpRecvPosted = 4,
  ncclProfilerProxyOpRecvReceived = 5,
  ncclProfilerProxyOpRecvTransmitted = 6,
  ncclProfilerProxyOpRecvDone = 7,
  ncclProfilerProxyOpInProgress_v4 = 19,
  ncclProfilerProxyStepSendGPUWait = 8,      /* send: waiting for the kernel's data */
  ncclProfilerProxyStepSendPeerWait_v4 = 20, /* send: waiting for the receiver's credit */
  ncclProfilerProxyStepSendWait = 9,         /* send: on the network */
  ncclProfilerProxyStepRecvWait = 10,        /* receive: waiting for the network */
  ncclProfilerProxyStepRecvFlushWait = 11,   /* receive: flushing to device memory */
  ncclProfilerProxyStepRecvGPUWait = 12,     /* receive: waiting for the kernel to consume */
  ncclProfilerProxyCtrlIdle = 13,
  ncclProfilerProxyCtrlActive = 14,
  ncclProfilerProxyCtrlSleep = 15,
  ncclProfilerProxyCtrlWakeup = 16,
  ncclProfilerProxyCtrlAppend = 17,
  ncclProfilerProxyCtrlAppendEnd = 18,
  ncclProfilerNetPluginUpdate = 21,
  ncclProfilerKernelChStop = 22,      /* the channel finished; args carry its stop time */
  ncclProfilerGroupStartApiStop = 23, /* v5: ncclGroupStart returned */
  ncclProfilerGroupEndApiStart = 24   /* v5: ncclGroupEnd was called */
} ncclProfilerEventState_t;

typedef ncclProfilerEventState_t ncclProfilerEventState_v4_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;

/* NCCL's logger: level 0 none, 1 version, 2 warn, 3 info, 4 abort, 5 trace; flags = subsystems. */
typedef void (*ncclDebugLogger_t)(int level, unsigned long flags, const char* file, int line,
                                  const char* fmt, ...);

/* ---- version 5 (NCCL 2.28) ---- */
typedef struct {
  uint64_t type;   /* one ncclProfile* bit */
  void* parentObj; /* the parent event's handle (Coll: its CollApi event; KernelCh/ProxyOp: Coll) */
  int rank;        /* rank in the communicator */
  union {
    struct {
      bool graphCaptured;
      int groupDepth; /* 1: the implicit group of one API call; more: inside ncclGroupStart */
    } groupApi;
    struct {
      const char* func; /* "AllReduce", "AllGather", "Broadcast", "Reduce", "ReduceScatter" */
      size_t count;
      const char* datatype; /* "ncclFloat32", ... */
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func; /* "Send" or "Recv" */
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber; /* per communicator and per func, from 0 */
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;  /* "RING", "TREE", ... */
      const char* proto; /* "LL", "LL128", "SIMPLE" */
      void* parentGroup; /* the Group event (the v4 parent) */
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      pid_t pid; /* the process that created the operation */
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer; /* the device's globaltimer (ns) when the channel started */
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v5_t;

typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer; /* ncclProfilerKernelChStop: the device's globaltimer at the stop */
  } kernelCh;
} ncclProfilerEventStateArgs_v5_t;

typedef struct {
  const char* name;
  int (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
              int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  int (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr);
  int (*stopEvent)(void* eHandle);
  int (*recordEventState)(void* eHandle, ncclProfilerEventState_v5_t eState,
                          ncclProfilerEventStateArgs_v5_t* eStateArgs);
  int (*finalize)(void* context);
} ncclProfiler_v5_t;

/* ---- version 4 (NCCL 2.27): no API events, a one-byte type, init's arguments in another
 * order; Coll's parent is the Group event ---- */
typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v4_t;

typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v4_t;

typedef struct {
  const char* name;
  int (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash,
              int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  int (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v4_t* eDescr);
  int (*stopEvent)(void* eHandle);
  int (*recordEventState)(void* eHandle, ncclProfilerEventState_v4_t eState,
                          ncclProfilerEventStateArgs_v4_t* eStateArgs);
  int (*finalize)(void* context);
} ncclProfiler_v4_t;

#ifdef __cplusplus
} /* extern "C" */

#include <cstring>

namespace rs {

// A v5 event as NCCL's v4 adapter passes it to a v4 plugin: the same members, Coll's and P2p's
// parent is their Group event; false for the API events (GroupApi, CollApi, P2pApi,
// KernelLaunch), which v4 does not have.
inline bool NcclProfilerDescrV4(const ncclProfilerEventDescr_v5_t& d,
                                ncclProfilerEventDescr_v4_t* out) {
  ncclProfilerEventDescr_v4_t o;
  std::memset(&o, 0, sizeof(o));
  o.type = static_cast<uint8_t>(d.type);
  o.parentObj = d.parentObj;
  o.rank = d.rank;
  switch (d.type) {
    case ncclProfileGroup:
    case ncclProfileProxyCtrl:
      break;
    case ncclProfileColl:
      o.coll.seqNumber = d.coll.seqNumber;
      o.coll.func = d.coll.func;
      o.coll.sendBuff = d.coll.sendBuff;
      o.coll.recvBuff = d.coll.recvBuff;
      o.coll.count = d.coll.count;
      o.coll.root = d.coll.root;
      o.coll.datatype = d.coll.datatype;
      o.coll.nChannels = d.coll.nChannels;
      o.coll.nWarps = d.coll.nWarps;
      o.coll.algo = d.coll.algo;
      o.coll.proto = d.coll.proto;
      o.parentObj = d.coll.parentGroup;
      break;
    case ncclProfileP2p:
      o.p2p.func = d.p2p.func;
      o.p2p.buff = d.p2p.buff;
      o.p2p.count = d.p2p.count;
      o.p2p.datatype = d.p2p.datatype;
      o.p2p.peer = d.p2p.peer;
      o.p2p.nChannels = d.p2p.nChannels;
      o.parentObj = d.p2p.parentGroup;
      break;
    case ncclProfileProxyOp:
      o.proxyOp.pid = d.proxyOp.pid;
      o.proxyOp.channelId = d.proxyOp.channelId;
      o.proxyOp.peer = d.proxyOp.peer;
      o.proxyOp.nSteps = d.proxyOp.nSteps;
      o.proxyOp.chunkSize = d.proxyOp.chunkSize;
      o.proxyOp.isSend = d.proxyOp.isSend;
      break;
    case ncclProfileProxyStep:
      o.proxyStep.step = d.proxyStep.step;
      break;
    case ncclProfileKernelCh:
      o.kernelCh.channelId = d.kernelCh.channelId;
      o.kernelCh.pTimer = d.kernelCh.pTimer;
      break;
    case ncclProfileNetPlugin:
      o.netPlugin.id = d.netPlugin.id;
      o.netPlugin.data = d.netPlugin.data;
      break;
    default:
      return false;  // API events do not exist in v4
  }
  *out = o;
  return true;
}

}  // namespace rs
#endif

#endif /* RSCORE_NCCL_PROFILER_H_ */
