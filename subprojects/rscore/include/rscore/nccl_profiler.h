/* The NCCL profiler plugin interface, versions 7 (NCCL 2.31), 6 (NCCL 2.29-2.30), 5 (NCCL 2.28)
 * and 4 (NCCL 2.27): the structs NCCL passes to a plugin found as libnccl-profiler.so (or
 * NCCL_PROFILER_PLUGIN), written here with the same layouts, type names and enum values so
 * that a plugin built against this header is loaded by NCCL, and so that the test bed's NCCL
 * library calls a plugin exactly as NCCL does. Versions 1-3 are left out: they carry no
 * device timestamps. Layouts from NCCL's src/include/plugin/profiler/profiler_v{4,5,6,7}.h
 * (2.30.7 for v6, the 2.31 development branch for v7).
 *
 * A plugin exports a variable `ncclProfiler_v7` (and/or _v6, _v5, _v4); NCCL looks the newest
 * one it knows up first (src/plugin/profiler.cc, ncclProfilerPluginLoad) and adapts its own
 * events down to an older table, dropping what that version lacks (v6 and older: no
 * KernelPhase events, no user tags; v5 and older: no copy-engine events). Every function
 * returns an ncclResult_t, written here as int (the enum's size and values are those of
 * nccl.h: 0 = ncclSuccess). Only `init` may return an error (NCCL then runs without the
 * plugin). C and C++; NCCL's adapters from a newer event to an older table are in
 * rscore/nccl_profiler_adapters.h (C++). */
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
  ncclProfileGroup = (1 << 0),         /* a launched group of operations (one plan) */
  ncclProfileColl = (1 << 1),          /* a collective as NCCL enqueues it */
  ncclProfileP2p = (1 << 2),           /* a send or receive as enqueued */
  ncclProfileProxyOp = (1 << 3),       /* the network work of one channel and peer */
  ncclProfileProxyStep = (1 << 4),     /* one network transfer of a ProxyOp */
  ncclProfileProxyCtrl = (1 << 5),     /* the proxy thread's own states */
  ncclProfileKernelCh = (1 << 6),      /* one channel of the kernel, device timestamps */
  ncclProfileNetPlugin = (1 << 7),     /* events defined by a network plugin */
  ncclProfileGroupApi = (1 << 8),      /* v5: ncclGroupStart/End as the user called them */
  ncclProfileCollApi = (1 << 9),       /* v5: a collective API call */
  ncclProfileP2pApi = (1 << 10),       /* v5: a send/recv API call */
  ncclProfileKernelLaunch = (1 << 11), /* v5: the kernel launch on the stream */
  ncclProfileCeColl = (1 << 12),       /* v6: a collective run by the copy engines */
  ncclProfileCeSync = (1 << 13),       /* v6: a copy-engine collective's synchronization */
  ncclProfileCeBatch = (1 << 14),      /* v6: a batch of a copy-engine collective's copies */
  ncclProfileKernelPhase = (1 << 15)   /* v7: one phase of a kernel channel (NCCL then turns
                                        * KernelCh on as well) */
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
  ncclProfilerGroupEndApiStart = 24,  /* v5: ncclGroupEnd was called */
  ncclProfilerCeCollStart = 25,       /* 25-30: v6's copy-engine states */
  ncclProfilerCeCollComplete = 26,
  ncclProfilerCeSyncStart = 27,
  ncclProfilerCeSyncComplete = 28,
  ncclProfilerCeBatchStart = 29,
  ncclProfilerCeBatchComplete = 30,
  ncclProfilerKernelPhaseStop = 31 /* v7: a kernel phase ended; args->kernelCh.pTimer */
} ncclProfilerEventState_t;

typedef ncclProfilerEventState_t ncclProfilerEventState_v4_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v6_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v7_t;

/* v7's kernel phases (the descriptor's kernelPhase.phaseId): NCCL 2.31 reports, per channel,
 * the kernel's stretch from its start until its opening barrier with its peers passed, the
 * work, and the closing barrier to its stop; a phase of zero length is not reported. */
enum {
  ncclProfilerKernelPhaseInitialSync = 0,
  ncclProfilerKernelPhaseCompute = 1,
  ncclProfilerKernelPhaseFinalSync = 2
};

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

/* ---- version 6 (NCCL 2.29, 2.30): v5's members and the copy-engine events ---- */
typedef struct {
  uint64_t type;
  void* parentObj; /* CeColl: its CollApi event; CeSync / CeBatch: their CeColl event */
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
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
      void* parentGroup;
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
    struct {
      uint64_t seqNumber; /* the communicator's copy-engine collectives, from 0 */
      const char* func;   /* "AllGather", "AlltoAll", "Gather", "Scatter" */
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy; /* "MC" (NVLS multicast) or "UC" */
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
} ncclProfilerEventDescr_v6_t;

typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v6_t;

typedef struct {
  const char* name;
  int (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
              int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  int (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v6_t* eDescr);
  int (*stopEvent)(void* eHandle);
  int (*recordEventState)(void* eHandle, ncclProfilerEventState_v6_t eState,
                          ncclProfilerEventStateArgs_v6_t* eStateArgs);
  int (*finalize)(void* context);
} ncclProfiler_v6_t;

/* ---- version 7 (NCCL 2.31): v6's members, a user tag per call, the kernel's phases ---- */
typedef struct {
  uint64_t type;
  void* parentObj; /* KernelPhase: its KernelCh event */
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
      uint64_t userTag; /* ncclCollConfig_t.userProfilerTag of the call; 0: untagged */
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
      uint64_t userTag;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
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
      void* parentGroup;
      const char* kernelVariant;
      bool isSymColl; /* a symmetric-memory kernel */
      uint64_t userTag;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
      uint64_t userTag;
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
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
      uint64_t userTag;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
    struct {
      uint8_t channelId;
      uint8_t phaseId;       /* ncclProfilerKernelPhase* */
      const char* phaseName; /* "initial_sync", "compute", "final_sync" */
      uint64_t pTimer;       /* the device's globaltimer at the phase's start */
    } kernelPhase;
  };
} ncclProfilerEventDescr_v7_t;

/* The same members as v5's (a KernelPhaseStop carries its stop time in kernelCh.pTimer). */
typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v7_t;

typedef struct {
  const char* name;
  int (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
              int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  int (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v7_t* eDescr);
  int (*stopEvent)(void* eHandle);
  int (*recordEventState)(void* eHandle, ncclProfilerEventState_v7_t eState,
                          ncclProfilerEventStateArgs_v7_t* eStateArgs);
  int (*finalize)(void* context);
} ncclProfiler_v7_t;

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
#endif

#endif /* RSCORE_NCCL_PROFILER_H_ */
