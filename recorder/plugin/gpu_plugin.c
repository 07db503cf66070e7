/* rankscope's NCCL profiler plugin (libnccl-profiler-rankscope.so): the ncclProfiler_v7 (NCCL
 * 2.31), _v6 (2.29, 2.30), _v5 (2.28) and _v4 (2.27) tables; NCCL takes the newest it knows.
 * NCCL calls them from inside the training process; the plugin turns each collective / send /
 * receive into one record (gpu_ring.h) in the process's shared region, which rankscope's
 * recorder reads. What a version adds: v5 the API events; v6 copy-engine collectives (counted
 * only: no device time); v7 a user tag per call and the kernel channels' phases.
 *
 * The events, as NCCL sends them:
 *   host thread: [GroupApi] CollApi/P2pApi (v5) -> KernelLaunch (v5) -> Group -> Coll/P2p
 *     start and stop ("enqueued");
 *   NCCL's proxy thread (2.31: its profiler thread): KernelCh start (the channel's device
 *     start time), v7's KernelPhase events, the KernelChStop state (device stop time),
 *     ProxyOp per channel and peer, ProxyStep per network transfer with its size and the
 *     states that say what the proxy waited for (gpu_proxy.h).
 * Numbering (exact, so records join the recorder's NCCL call rows): a collective's seq counts
 * its communicator's collective calls from 1 -- v5 counts CollApi events (NCCL starts them
 * only for calls that passed its argument checks) and the Coll event finds its call through
 * its parent handle; v4 has no API events and counts Coll events (launch order,
 * RS_GPU_SEQ_LAUNCH_ORDER). Sends and receives count per peer and direction at their P2p
 * event. Numbering goes on whether or not a recorder reads (the base mask of gpu_mask.h).
 * Records are made only while a recorder reads (its heartbeat in the header is fresh), or
 * while none ever did in the startup window after the region was made (gpu_ring.h):
 * otherwise an operation is counted (ops, ops_unrecorded) and nothing else happens.
 *
 * Rules kept everywhere: no allocation after init (handles are values, gpu_handle.h; slots
 * are a fixed pool, gpu_slots.h), no lock an event could wait on for long (atomics; the
 * clock's try-lock, gpu_clock.h), and only init may return an error. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "recorder/plugin/gpu_atomic.h"
#include "recorder/plugin/gpu_context.h"
#include "recorder/plugin/gpu_handle.h"
#include "recorder/plugin/gpu_mask.h"
#include "recorder/plugin/gpu_names.h"
#include "recorder/plugin/gpu_operation.h"
#include "recorder/plugin/gpu_proxy.h"
#include "recorder/plugin/gpu_region.h"
#include "recorder/plugin/gpu_ring.h"
#include "recorder/plugin/gpu_slots.h"
#include "rscore/nccl_profiler.h"

#define EXPORT __attribute__((visibility("default")))

enum { NCCL_SUCCESS = 0, NCCL_SYSTEM_ERROR = 2 }; /* ncclResult_t */
enum { NCCL_LOG_WARN = 2, NCCL_LOG_INFO = 3 };
#define NCCL_LOG_INIT 1ul /* the NCCL_INIT subsystem */

/* ---- the calling thread ---- */

static _Thread_local int32_t tls_tid;

static int32_t thread_id(void) {
  if (tls_tid == 0) tls_tid = (int32_t)syscall(SYS_gettid);
  return tls_tid;
}

static void forget_after_fork(void) {
  rs_gpu_region_forget();
  rs_gpu_mask_forget();
  tls_tid = 0;
}

static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void) { pthread_atfork(NULL, NULL, forget_after_fork); }

/* ---- init / finalize ---- */

static int init_common(void** context, int api_version, uint64_t comm_hash, int* mask,
                       const char* name, int nranks, int rank, ncclDebugLogger_t log) {
  *context = NULL;
  pthread_once(&g_atfork_once, register_atfork);
  struct rs_gpu_ring_header* h = rs_gpu_region_open(rs_gpu_slots_reset);
  if (h == NULL) {
    if (log != NULL) {
      log(NCCL_LOG_WARN, NCCL_LOG_INIT, __FILE__, __LINE__,
          "rankscope profiler: cannot create its shared memory (memfd %s): %s; NCCL goes on "
          "without it",
          RS_GPU_RING_NAME, strerror(errno));
    }
    return NCCL_SYSTEM_ERROR;
  }
  struct rs_gpu_context* ctx = rs_gpu_context_new(comm_hash, rank, nranks, api_version);
  if (ctx == NULL) {
    if (log != NULL) {
      log(NCCL_LOG_WARN, NCCL_LOG_INIT, __FILE__, __LINE__,
          "rankscope profiler: out of memory for communicator %lx", (unsigned long)comm_hash);
    }
    return NCCL_SYSTEM_ERROR;
  }
  __atomic_store_n(&h->api_version, api_version, __ATOMIC_RELEASE);
  rs_gpu_count(&h->comms);
  rs_gpu_mask_init(mask, api_version);
  /* In the startup window: device events from the first call on (a recorder that comes
   * later switches them on at the next call, which goes unrecorded: gpu_mask.h). */
  if (rs_gpu_region_in_startup_window(rs_gpu_now_ns())) rs_gpu_mask_want_full(1);
  rs_gpu_mask_leave();
  if (log != NULL) {
    log(NCCL_LOG_INFO, NCCL_LOG_INIT, __FILE__, __LINE__,
        "rankscope profiler (API v%d): communicator %s hash %lx rank %d of %d, records for pid "
        "%d in memfd %s",
        api_version, name != NULL ? name : "(unnamed)", (unsigned long)comm_hash, rank, nranks,
        (int)h->pid, RS_GPU_RING_NAME);
  }
  *context = ctx;
  return NCCL_SUCCESS;
}

/* ---- host thread: API calls, launches, operations ---- */

/* A call captured into a CUDA graph (NCCL's graphCaptured) is numbered like any call: the
 * recorder's NCCL probe sees it too. NCCL runs nothing for it now; its operations come at
 * each replay of the graph (see replay_numbering). */
static void* api_start(struct rs_gpu_context* ctx, int p2p, int graph) {
  const int64_t now = rs_gpu_now_ns();
  const uint64_t number = rs_gpu_context_api_call(ctx, p2p, now);
  const int full = rs_gpu_mask_call_full(); /* before any switch below */
  rs_gpu_mask_want_full(rs_gpu_region_reader_present(now));
  if (graph) {
    struct rs_gpu_ring_header* h = rs_gpu_region_header();
    rs_gpu_count(&h->graph_calls);
    if (!full) rs_gpu_count(&h->graph_calls_unrecorded);
    /* NCCL numbers a send / receive at its P2p event, which a captured call has only at its
     * replays, and the recorder at the call: from here on the two may disagree. */
    if (p2p) __atomic_store_n(&ctx->p2p_captured, 1, __ATOMIC_RELAXED);
  }
  return rs_gpu_api_handle(p2p ? RS_GPU_H_P2P_API : RS_GPU_H_COLL_API, number, full, graph);
}

/* An operation of a graph's replay: its parent is the API handle of a call captured into the
 * graph, the same at every replay, so the call's number cannot tell replays apart. A
 * collective takes the next number of the communicator's replayed collectives instead: every
 * rank replays its graphs' collectives in the same order (NCCL's rule for a communicator's
 * collectives), so the k-th replayed collective is the same one on every rank -- as long as
 * each rank counted the same replays, which holds where every rank's capture had the device
 * events (graph_calls_unrecorded counts the captures that did not). Only replays of such
 * captures advance it, whether a recorder reads or not: NCCL starts a replay's events from the
 * graph's host node, which a plan has only with proxy work, always present when the capture's
 * mask had KernelCh (profiler.cc, ncclProfilerStartTaskEvents) and not otherwise. A send /
 * receive is not numbered. */
static int replay_numbering(struct rs_gpu_context* ctx, const struct rs_gpu_task* t, uint64_t call,
                            struct rs_gpu_numbering* n) {
  n->flags |= RS_GPU_GRAPH_REPLAY;
  n->graph_call_seq = call & RS_GPU_H_API_NUMBER_MASK;
  rs_gpu_count(&rs_gpu_region_header()->graph_replay_ops);
  if (!t->p2p && (call & RS_GPU_H_API_FULL) != 0) {
    n->seq = __atomic_add_fetch(&ctx->graph_replays, 1, __ATOMIC_RELAXED);
  }
  return 1;
}

/* Numbers the operation (n->seq; 0: none); 0 if it is not to be recorded. *full: NCCL's mask
 * for its call had the device events. */
static int number_task(struct rs_gpu_context* ctx, const struct rs_gpu_task* t, int* full,
                       struct rs_gpu_numbering* n) {
  const int send = rs_gpu_func_of(t->func) == RS_GPU_SEND;
  if (ctx->api_version < 5) {
    *full = rs_gpu_mask_plan_full();
    if (t->p2p) {
      n->seq = rs_gpu_context_p2p_seq(ctx, send, t->peer);
    } else {
      n->flags |= RS_GPU_SEQ_LAUNCH_ORDER;
      n->seq = __atomic_add_fetch(&ctx->coll_calls, 1, __ATOMIC_RELAXED);
    }
    return n->seq != 0;
  }
  if (rs_gpu_handle_kind(t->parent) != (t->p2p ? RS_GPU_H_P2P_API : RS_GPU_H_COLL_API)) {
    *full = 0; /* a collective not numbered, or no call of ours */
    return 0;
  }
  const uint64_t call = rs_gpu_handle_payload(t->parent);
  *full = (call & RS_GPU_H_API_FULL) != 0;
  if (call & RS_GPU_H_API_GRAPH) return replay_numbering(ctx, t, call, n);
  n->api_ns = rs_gpu_context_api_ns(ctx, t->p2p, call & RS_GPU_H_API_NUMBER_MASK);
  if (!t->p2p) {
    n->seq = call & RS_GPU_H_API_NUMBER_MASK;
    return 1;
  }
  n->seq = rs_gpu_context_p2p_seq(ctx, send, t->peer);
  if (n->seq == 0) return 0; /* a peer outside the communicator */
  /* After a captured send / receive the recorder's numbers may be ahead: recorded unnumbered. */
  if (__atomic_load_n(&ctx->p2p_captured, __ATOMIC_RELAXED)) n->seq = 0;
  return 1;
}

static void* task_start(struct rs_gpu_context* ctx, const struct rs_gpu_task* t) {
  int full = 0;
  struct rs_gpu_numbering n;
  memset(&n, 0, sizeof(n));
  const int recordable = number_task(ctx, t, &full, &n);
  struct rs_gpu_ring_header* h = rs_gpu_region_header();
  rs_gpu_count(&h->ops);
  /* v5 looked for a reader at the call's API event just before; v4 has only this one. */
  int reader = 0;
  int64_t now = 0;
  if (full || ctx->api_version < 5) {
    now = rs_gpu_now_ns();
    reader = rs_gpu_region_reader_present(now);
    rs_gpu_mask_want_full(reader);
  }
  if (!reader || !full || !recordable) { /* no device events will come for it */
    rs_gpu_count(&h->ops_unrecorded);
    return NULL;
  }
  return rs_gpu_operation_enqueue(ctx, t, &n, now, thread_id());
}

/* ---- the tables' functions ---- */

static int start_host_event(struct rs_gpu_context* ctx, void** handle, uint64_t type,
                            const struct rs_gpu_task* t) {
  /* NCCL reads the mask for a call just before its GroupApi event and the plugin learns what
   * it read only at the CollApi / P2pApi event after it: the GroupApi event must not count as
   * a callback in between (gpu_mask.h), or a switch during it would go unnoticed. */
  if (type == ncclProfileGroupApi) return NCCL_SUCCESS;
  rs_gpu_mask_enter();
  switch (type) {
    case ncclProfileCollApi:
      /* Numbered as nccl_events numbers the calls: AllReduce, AllGather, ReduceScatter,
       * Broadcast, Reduce. A CollApi event of another function (NCCL 2.29+ starts one for a
       * copy-engine AlltoAll, Gather or Scatter: enqueue.cc, ceCollTaskAppend) is no call the
       * recorder numbers: counting it would put every later collective one number ahead. */
      if (rs_gpu_func_of(t->func) <= RS_GPU_ALL_REDUCE) {
        *handle = api_start(ctx, 0, t->graph_captured);
      }
      break;
    case ncclProfileP2pApi:
      *handle = api_start(ctx, 1, t->graph_captured);
      break;
    case ncclProfileKernelLaunch: /* needed only for operations recorded */
      if (rs_gpu_mask_current() & ncclProfileKernelCh) {
        __atomic_store_n(&ctx->launch_ns, rs_gpu_now_ns(), __ATOMIC_RELAXED);
      }
      break;
    case ncclProfileGroup:
      if (ctx->api_version < 5) rs_gpu_mask_plan_begin();
      break;
    case ncclProfileColl:
    case ncclProfileP2p:
      *handle = task_start(ctx, t);
      break;
    default:
      break;
  }
  rs_gpu_mask_leave();
  return NCCL_SUCCESS;
}

static int start_device_event(void** handle, uint64_t type, const void* parent, uint64_t ptimer,
                              pid_t proxy_pid, int peer) {
  switch (type) {
    case ncclProfileKernelCh:
      *handle = rs_gpu_operation_kernel_ch_start(parent, ptimer);
      break;
    case ncclProfileProxyOp: {
      const struct rs_gpu_ring_header* h = rs_gpu_region_header();
      if (h != NULL && proxy_pid == h->pid) { /* another process's parent is no handle of ours */
        *handle = rs_gpu_proxy_op_start(parent, peer);
      }
      break;
    }
    case ncclProfileProxyStep:
      *handle = rs_gpu_proxy_step_start(parent);
      break;
    default: /* ProxyCtrl, NetPlugin, CeSync, CeBatch */
      break;
  }
  return NCCL_SUCCESS;
}

/* v6+: a collective on the copy engines. NCCL starts its event at the launch with the call's
 * CollApi event as parent and stops it once the copies are enqueued; no device time ever comes
 * (ce_coll.cc, ncclLaunchCeColl): counted in the header, no record, no handle. Its call keeps
 * its number (the CollApi event counted it), so later collectives' numbers stay exact. */
static int copy_engine_collective(void) {
  struct rs_gpu_ring_header* h = rs_gpu_region_header();
  if (h != NULL) rs_gpu_count(&h->ops_copy_engine);
  return NCCL_SUCCESS;
}

static int stop_event(void* handle) {
  switch (rs_gpu_handle_kind(handle)) {
    case RS_GPU_H_COLL_API:
    case RS_GPU_H_P2P_API:
      rs_gpu_mask_enter();
      rs_gpu_mask_leave();
      break;
    case RS_GPU_H_TASK: /* the host's reference ("enqueued") */
      rs_gpu_mask_enter();
      rs_gpu_operation_release(handle);
      rs_gpu_mask_leave();
      break;
    case RS_GPU_H_KERNEL_CH:
      rs_gpu_operation_kernel_ch_stop(handle);
      break;
    case RS_GPU_H_PROXY_OP:
      rs_gpu_operation_release(handle);
      break;
    case RS_GPU_H_PROXY_STEP:
      rs_gpu_proxy_step_stop(handle);
      break;
    default:
      break;
  }
  return NCCL_SUCCESS;
}

static int record_event_state(void* handle, ncclProfilerEventState_t state,
                              ncclProfilerEventStateArgs_v5_t* args) {
  switch (rs_gpu_handle_kind(handle)) {
    case RS_GPU_H_KERNEL_CH:
      if (state == ncclProfilerKernelChStop && args != NULL) {
        rs_gpu_operation_kernel_ch_stopped_at(handle, args->kernelCh.pTimer);
      }
      break;
    case RS_GPU_H_PROXY_STEP:
      rs_gpu_proxy_step_state(handle, state, args);
      break;
    case RS_GPU_H_KERNEL_PHASE:
      if (state == ncclProfilerKernelPhaseStop && args != NULL) {
        rs_gpu_operation_kernel_phase_stopped_at(handle, args->kernelCh.pTimer);
      }
      break;
    default:
      break;
  }
  return NCCL_SUCCESS;
}

static int finalize(void* context) {
  struct rs_gpu_context* ctx = context;
  if (rs_gpu_context_usable(ctx)) {
    rs_gpu_operation_finalize(ctx);
    rs_gpu_mask_leave();
  }
  rs_gpu_context_retire(ctx);
  return NCCL_SUCCESS;
}

/* The events v5 and v4 describe with the same members (their descriptors are different types,
 * hence a macro: case labels of start_v5's and start_v4's switch on d->type): device events
 * start here; a Coll or P2p event's description goes into the task t. */
#define START_COMMON_EVENTS                                                                       \
  case ncclProfileKernelCh:                                                                       \
    return start_device_event(handle, d->type, d->parentObj, d->kernelCh.pTimer, 0, -1);          \
  case ncclProfileProxyOp:                                                                        \
    return start_device_event(handle, d->type, d->parentObj, 0, d->proxyOp.pid, d->proxyOp.peer); \
  case ncclProfileProxyStep:                                                                      \
  case ncclProfileProxyCtrl:                                                                      \
  case ncclProfileNetPlugin:                                                                      \
    return start_device_event(handle, d->type, d->parentObj, 0, 0, -1);                           \
  case ncclProfileColl:                                                                           \
    t.func = d->coll.func;                                                                        \
    t.datatype = d->coll.datatype;                                                                \
    t.algo = d->coll.algo;                                                                        \
    t.proto = d->coll.proto;                                                                      \
    t.count = d->coll.count;                                                                      \
    t.nccl_seq = d->coll.seqNumber;                                                               \
    t.root = d->coll.root;                                                                        \
    t.channels = d->coll.nChannels;                                                               \
    break;                                                                                        \
  case ncclProfileP2p:                                                                            \
    t.p2p = 1;                                                                                    \
    t.func = d->p2p.func;                                                                         \
    t.datatype = d->p2p.datatype;                                                                 \
    t.count = d->p2p.count;                                                                       \
    t.peer = d->p2p.peer;                                                                         \
    t.channels = d->p2p.nChannels;                                                                \
    break;

/* v5+'s API events, whose members v5, v6 and v7 place alike. */
#define START_API_EVENTS                         \
  case ncclProfileCollApi:                       \
    t.func = d->collApi.func;                    \
    t.graph_captured = d->collApi.graphCaptured; \
    break;                                       \
  case ncclProfileP2pApi:                        \
    t.graph_captured = d->p2pApi.graphCaptured;  \
    break;

/* ---- version 5 ---- */

static int init_v5(void** context, uint64_t comm_id, int* mask, const char* name, int n_nodes,
                   int nranks, int rank, ncclDebugLogger_t log) {
  (void)n_nodes;
  return init_common(context, 5, comm_id, mask, name, nranks, rank, log);
}

static int start_v5(void* context, void** handle, ncclProfilerEventDescr_v5_t* d) {
  *handle = NULL;
  struct rs_gpu_context* ctx = context;
  if (d == NULL || !rs_gpu_context_usable(ctx)) return NCCL_SUCCESS;
  struct rs_gpu_task t;
  memset(&t, 0, sizeof(t));
  t.parent = d->parentObj;
  switch (d->type) {
    START_COMMON_EVENTS
    START_API_EVENTS
    default:
      break;
  }
  return start_host_event(ctx, handle, d->type, &t);
}

EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {
    "rankscope", init_v5, start_v5, stop_event, record_event_state, finalize,
};

/* ---- version 6: v5's events and the copy-engine collectives ---- */

static int init_v6(void** context, uint64_t comm_id, int* mask, const char* name, int n_nodes,
                   int nranks, int rank, ncclDebugLogger_t log) {
  (void)n_nodes;
  return init_common(context, 6, comm_id, mask, name, nranks, rank, log);
}

static int start_v6(void* context, void** handle, ncclProfilerEventDescr_v6_t* d) {
  *handle = NULL;
  struct rs_gpu_context* ctx = context;
  if (d == NULL || !rs_gpu_context_usable(ctx)) return NCCL_SUCCESS;
  struct rs_gpu_task t;
  memset(&t, 0, sizeof(t));
  t.parent = d->parentObj;
  switch (d->type) {
    START_COMMON_EVENTS
    START_API_EVENTS
    case ncclProfileCeColl:
      return copy_engine_collective();
    default:
      break;
  }
  return start_host_event(ctx, handle, d->type, &t);
}

EXPORT ncclProfiler_v6_t ncclProfiler_v6 = {
    "rankscope", init_v6, start_v6, stop_event, record_event_state, finalize,
};

/* ---- version 7: v6's events, each call's user tag, the kernel channels' phases ---- */

static int init_v7(void** context, uint64_t comm_id, int* mask, const char* name, int n_nodes,
                   int nranks, int rank, ncclDebugLogger_t log) {
  (void)n_nodes;
  return init_common(context, 7, comm_id, mask, name, nranks, rank, log);
}

static int start_v7(void* context, void** handle, ncclProfilerEventDescr_v7_t* d) {
  *handle = NULL;
  struct rs_gpu_context* ctx = context;
  if (d == NULL || !rs_gpu_context_usable(ctx)) return NCCL_SUCCESS;
  struct rs_gpu_task t;
  memset(&t, 0, sizeof(t));
  t.parent = d->parentObj;
  switch (d->type) {
    START_COMMON_EVENTS
    START_API_EVENTS
    case ncclProfileCeColl:
      return copy_engine_collective();
    case ncclProfileKernelPhase:
      *handle = rs_gpu_operation_kernel_phase_start(d->parentObj, d->kernelPhase.phaseId,
                                                    d->kernelPhase.pTimer);
      return NCCL_SUCCESS;
    default:
      break;
  }
  /* The tag NCCL copied from the call's config into its task's event, and the kernel. */
  if (d->type == ncclProfileColl) {
    t.user_tag = d->coll.userTag;
    t.flags = RS_GPU_V7_TASK | (d->coll.isSymColl ? RS_GPU_SYMMETRIC_KERNEL : 0);
  } else if (d->type == ncclProfileP2p) {
    t.user_tag = d->p2p.userTag;
    t.flags = RS_GPU_V7_TASK;
  }
  return start_host_event(ctx, handle, d->type, &t);
}

EXPORT ncclProfiler_v7_t ncclProfiler_v7 = {
    "rankscope", init_v7, start_v7, stop_event, record_event_state, finalize,
};

/* ---- version 4: no API or launch events, a one-byte type, init's arguments reordered ---- */

static int init_v4(void** context, int* mask, const char* name, uint64_t comm_hash, int n_nodes,
                   int nranks, int rank, ncclDebugLogger_t log) {
  (void)n_nodes;
  return init_common(context, 4, comm_hash, mask, name, nranks, rank, log);
}

static int start_v4(void* context, void** handle, ncclProfilerEventDescr_v4_t* d) {
  *handle = NULL;
  struct rs_gpu_context* ctx = context;
  if (d == NULL || !rs_gpu_context_usable(ctx)) return NCCL_SUCCESS;
  struct rs_gpu_task t;
  memset(&t, 0, sizeof(t));
  t.parent = d->parentObj;
  switch (d->type) {
    START_COMMON_EVENTS
    case ncclProfileGroup:
      break;
    default:
      return NCCL_SUCCESS; /* v4 has no API events */
  }
  return start_host_event(ctx, handle, d->type, &t);
}

EXPORT ncclProfiler_v4_t ncclProfiler_v4 = {
    "rankscope", init_v4, start_v4, stop_event, record_event_state, finalize,
};
