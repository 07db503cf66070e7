/* rankscope's NCCL profiler plugin (libnccl-profiler-rankscope.so): the ncclProfiler_v5 (NCCL
 * 2.28) and ncclProfiler_v4 (NCCL 2.27) tables. NCCL calls them from inside the training
 * process; the plugin turns each collective / send / receive into one record (gpu_ring.h) in
 * the process's shared region, which rankscope's recorder reads.
 *
 * The events, as NCCL sends them:
 *   host thread: [GroupApi] CollApi/P2pApi (v5) -> KernelLaunch (v5) -> Group -> Coll/P2p
 *     start and stop ("enqueued");
 *   NCCL's proxy thread: KernelCh start (the channel's device start time) and its
 *     KernelChStop state (device stop time), ProxyOp per channel and peer, ProxyStep per
 *     network transfer with its size.
 * Numbering (exact, so records join the recorder's NCCL call rows): a collective's seq counts
 * its communicator's collective calls from 1 -- v5 counts CollApi events (NCCL starts them
 * only for calls that passed its argument checks) and the Coll event finds its call through
 * its parent handle; v4 has no API events and counts Coll events (launch order,
 * RS_GPU_SEQ_LAUNCH_ORDER). Sends and receives count per peer and direction at their P2p
 * event. Numbering goes on whether or not a recorder reads (the base mask of gpu_mask.h).
 * Records are made only while a recorder reads (its heartbeat in the header is fresh):
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

#include "gpu_clock.h"
#include "gpu_context.h"
#include "gpu_handle.h"
#include "gpu_mask.h"
#include "gpu_names.h"
#include "gpu_region.h"
#include "gpu_ring.h"
#include "gpu_slots.h"
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

static void count(uint64_t* counter) { __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED); }

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
  count(&h->comms);
  rs_gpu_mask_init(mask, api_version);
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

/* Device times on the host clock (gpu_clock.c), and the conversion's bound. */
static void convert_times(struct rs_gpu_context* ctx, const struct rs_gpu_slot_info* info,
                          struct rs_gpu_op* rec) {
  int any = 0, valid = 1, bounded = 1;
  int64_t error = 0;
  if (rec->device_start_raw != 0) {
    const struct rs_gpu_clock_estimate e = rs_gpu_clock_at(&ctx->clock, info->start_cb_ns);
    any = 1;
    valid &= e.valid;
    bounded &= e.bounded;
    if (e.valid) rec->device_start_ns = (int64_t)rec->device_start_raw - e.offset_ns;
    if (e.error_ns > error) error = e.error_ns;
  }
  if (rec->device_end_raw != 0) {
    const struct rs_gpu_clock_estimate e = rs_gpu_clock_at(&ctx->clock, info->end_cb_ns);
    any = 1;
    valid &= e.valid;
    bounded &= e.bounded;
    if (e.valid) rec->device_end_ns = (int64_t)rec->device_end_raw - e.offset_ns;
    if (e.error_ns > error) error = e.error_ns;
  }
  if (!any) return;
  if (valid && bounded) {
    rec->clock_error_ns = error;
  } else {
    rec->flags |= RS_GPU_CLOCK_UNBOUNDED;
    rec->clock_error_ns = -1;
  }
}

/* Writes the operation in slot `index` (owned by the caller: no references left) to the ring
 * and frees the slot. */
static void write_and_free(uint32_t index, uint32_t extra_flags) {
  const struct rs_gpu_slot_info* info = rs_gpu_slot_info(index);
  struct rs_gpu_op rec;
  memcpy(&rec, rs_gpu_region_slot(index), sizeof(rec));
  const uint8_t needed = rec.channels > 0 ? rec.channels : 1;
  if (rec.channels_stopped >= needed) rec.state = RS_GPU_COMPLETED;
  rec.flags |= extra_flags;
  convert_times((struct rs_gpu_context*)info->owner, info, &rec);
  rs_gpu_region_write(&rec);
  rs_gpu_slot_free(index);
}

/* Drops references of the operation a handle names; the last one writes it. */
static void release(const void* handle, uint32_t n) {
  const int r = rs_gpu_slot_release(handle, n);
  if (r == 1) {
    write_and_free(rs_gpu_handle_slot(handle), 0);
  } else if (r < 0) {
    struct rs_gpu_ring_header* h = rs_gpu_region_header();
    if (h != NULL) count(&h->drops_late_event);
  }
}

static void finalize_context(struct rs_gpu_context* ctx) {
  if (rs_gpu_context_usable(ctx)) {
    for (uint32_t i = 0; i < RS_GPU_SLOT_COUNT; ++i) {
      if (rs_gpu_slot_claim(i, ctx)) write_and_free(i, RS_GPU_FINALIZED);
    }
    rs_gpu_mask_leave();
  }
  rs_gpu_context_free(ctx);
}

/* ---- host thread: API calls, launches, operations ---- */

static void* api_start(struct rs_gpu_context* ctx, int p2p) {
  const int64_t now = rs_gpu_now_ns();
  const uint64_t number = rs_gpu_context_api_call(ctx, p2p, now);
  const int full = rs_gpu_mask_call_full(); /* before any switch below */
  rs_gpu_mask_want_full(rs_gpu_region_reader_present(now));
  return rs_gpu_api_handle(p2p ? RS_GPU_H_P2P_API : RS_GPU_H_COLL_API, number, full);
}

/* A Coll or P2p event of either API version. */
struct task {
  int p2p;
  const char* func;
  const char* datatype;
  const char* algo;
  const char* proto;
  uint64_t count;
  uint64_t nccl_seq;
  int root;
  int peer;
  uint8_t channels;
  const void* parent; /* v5: the CollApi / P2pApi handle */
};

static uint64_t number_task(struct rs_gpu_context* ctx, const struct task* t, int* full,
                            int64_t* api_ns, uint32_t* flags) {
  if (t->p2p) {
    const int send = rs_gpu_func_of(t->func) == RS_GPU_SEND;
    if (ctx->api_version >= 5) {
      const int ours = rs_gpu_handle_kind(t->parent) == RS_GPU_H_P2P_API;
      const uint64_t call = rs_gpu_handle_payload(t->parent);
      *full = ours && (call & RS_GPU_H_API_FULL) != 0;
      *api_ns = ours ? rs_gpu_context_api_ns(ctx, 1, call & RS_GPU_H_API_NUMBER_MASK) : 0;
    } else {
      *full = rs_gpu_mask_plan_full();
    }
    return rs_gpu_context_p2p_seq(ctx, send, t->peer);
  }
  if (ctx->api_version >= 5) {
    if (rs_gpu_handle_kind(t->parent) != RS_GPU_H_COLL_API) return 0; /* not numbered */
    const uint64_t call = rs_gpu_handle_payload(t->parent);
    *full = (call & RS_GPU_H_API_FULL) != 0;
    *api_ns = rs_gpu_context_api_ns(ctx, 0, call & RS_GPU_H_API_NUMBER_MASK);
    return call & RS_GPU_H_API_NUMBER_MASK;
  }
  *full = rs_gpu_mask_plan_full();
  *flags |= RS_GPU_SEQ_LAUNCH_ORDER;
  return __atomic_add_fetch(&ctx->coll_calls, 1, __ATOMIC_RELAXED);
}

static void* task_start(struct rs_gpu_context* ctx, const struct task* t) {
  int full = 0;
  int64_t api_ns = 0;
  uint32_t flags = 0;
  const uint64_t seq = number_task(ctx, t, &full, &api_ns, &flags);
  struct rs_gpu_ring_header* h = rs_gpu_region_header();
  count(&h->ops);
  /* v5 looked for a reader at the call's API event just before; v4 has only this one. */
  int reader = 0;
  int64_t now = 0;
  if (full || ctx->api_version < 5) {
    now = rs_gpu_now_ns();
    reader = rs_gpu_region_reader_present(now);
    rs_gpu_mask_want_full(reader);
  }
  if (!reader || !full || seq == 0) { /* no device events will come for it */
    count(&h->ops_unrecorded);
    return NULL;
  }
  uint32_t index, gen;
  struct rs_gpu_op* op = rs_gpu_slot_take(ctx, &index, &gen);
  if (op == NULL) {
    count(&h->drops_slots_full);
    return NULL;
  }
  const uint8_t func = rs_gpu_func_of(t->func);
  op->nccl_comm_hash = ctx->comm_hash;
  op->seq = seq;
  op->nccl_seq = t->p2p ? UINT64_MAX : t->nccl_seq;
  op->enqueue_ns = now;
  op->api_ns = api_ns;
  op->count = t->count;
  op->rank = ctx->rank;
  op->nranks = ctx->nranks;
  op->peer = t->p2p ? t->peer : (func == RS_GPU_BROADCAST || func == RS_GPU_REDUCE ? t->root : -1);
  op->tid = thread_id();
  op->func = func;
  op->datatype = rs_gpu_datatype_of(t->datatype);
  op->algo = rs_gpu_algo_of(t->algo);
  op->proto = rs_gpu_proto_of(t->proto);
  op->state = RS_GPU_ENQUEUED;
  op->channels = t->channels;
  op->flags = flags;
  rs_gpu_slot_info(index)->launch_ns = __atomic_load_n(&ctx->launch_ns, __ATOMIC_RELAXED);
  rs_gpu_slot_publish(index, gen);
  return rs_gpu_slot_handle(RS_GPU_H_TASK, index, gen);
}

/* ---- NCCL's proxy thread: kernel channels, network work ---- */

static void atomic_min_nonzero(uint64_t* v, uint64_t x) {
  uint64_t cur = __atomic_load_n(v, __ATOMIC_RELAXED);
  while ((cur == 0 || x < cur) &&
         !__atomic_compare_exchange_n(v, &cur, x, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

static void atomic_max(int64_t* v, int64_t x) {
  int64_t cur = __atomic_load_n(v, __ATOMIC_RELAXED);
  while (x > cur &&
         !__atomic_compare_exchange_n(v, &cur, x, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

static void atomic_max_u64(uint64_t* v, uint64_t x) {
  uint64_t cur = __atomic_load_n(v, __ATOMIC_RELAXED);
  while (x > cur &&
         !__atomic_compare_exchange_n(v, &cur, x, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

static void late_event(void) {
  struct rs_gpu_ring_header* h = rs_gpu_region_header();
  if (h != NULL) count(&h->drops_late_event);
}

/* A child event of the operation `parent` names (a reference held until it stops). */
static void* child_start(const void* parent, enum rs_gpu_handle_kind parent_kind,
                         enum rs_gpu_handle_kind kind) {
  if (rs_gpu_handle_kind(parent) != parent_kind) return NULL; /* an unrecorded operation */
  if (rs_gpu_slot_acquire(parent) == NULL) {
    late_event();
    return NULL;
  }
  return rs_gpu_slot_handle(kind, rs_gpu_handle_slot(parent), rs_gpu_handle_gen(parent));
}

/* The first channel start bounds the clock offset from above by the launch before it (v5);
 * every start and stop bounds it from below by the callback's own time. */
static void* kernel_ch_start(const void* parent, uint64_t ptimer) {
  void* handle = child_start(parent, RS_GPU_H_TASK, RS_GPU_H_KERNEL_CH);
  if (handle == NULL) return NULL;
  const int64_t now = rs_gpu_now_ns();
  const uint32_t index = rs_gpu_handle_slot(handle);
  struct rs_gpu_op* op = rs_gpu_region_slot(index);
  struct rs_gpu_slot_info* info = rs_gpu_slot_info(index);
  struct rs_gpu_context* ctx = info->owner;
  if (__atomic_fetch_add(&op->channels_started, 1, __ATOMIC_RELAXED) == 0) {
    __atomic_store_n(&info->start_cb_ns, now, __ATOMIC_RELAXED);
    if (info->launch_ns != 0) rs_gpu_clock_device_after(&ctx->clock, ptimer, info->launch_ns);
  }
  rs_gpu_clock_device_before(&ctx->clock, ptimer, now);
  if (ptimer != 0) atomic_min_nonzero(&op->device_start_raw, ptimer);
  uint8_t enqueued = RS_GPU_ENQUEUED;
  __atomic_compare_exchange_n(&op->state, &enqueued, RS_GPU_STARTED, 0, __ATOMIC_RELAXED,
                              __ATOMIC_RELAXED);
  return handle;
}

static void kernel_ch_stopped_at(const void* handle, uint64_t ptimer) {
  struct rs_gpu_op* op = rs_gpu_slot_live(handle);
  if (op == NULL) {
    late_event();
    return;
  }
  const int64_t now = rs_gpu_now_ns();
  struct rs_gpu_slot_info* info = rs_gpu_slot_info(rs_gpu_handle_slot(handle));
  atomic_max(&info->end_cb_ns, now);
  atomic_max_u64(&op->device_end_raw, ptimer);
  rs_gpu_clock_device_before(&((struct rs_gpu_context*)info->owner)->clock, ptimer, now);
}

/* The channel's own reference, and the device's once as many channels stopped as planned. */
static void kernel_ch_stop(const void* handle) {
  struct rs_gpu_op* op = rs_gpu_slot_live(handle);
  if (op == NULL) {
    late_event();
    return;
  }
  const uint8_t needed = op->channels > 0 ? op->channels : 1;
  const uint8_t stopped = __atomic_add_fetch(&op->channels_stopped, 1, __ATOMIC_RELAXED);
  release(handle, stopped == needed ? 2 : 1);
}

/* Network bytes: a send step's size when it goes on the network, a receive step's when it
 * arrived (NCCL sets the step's size just before both states; at the receive's later GPU-wait
 * state it may already hold a newer step's size). */
static void proxy_step_state(const void* handle, ncclProfilerEventState_t state,
                             const ncclProfilerEventStateArgs_v5_t* args) {
  const int sent = state == ncclProfilerProxyStepSendWait;
  if (args == NULL || (!sent && state != ncclProfilerProxyStepRecvFlushWait)) return;
  struct rs_gpu_op* op = rs_gpu_slot_live(handle);
  if (op == NULL) {
    late_event();
    return;
  }
  uint64_t* field = sent ? &op->net_bytes_sent : &op->net_bytes_recv;
  __atomic_fetch_add(field, (uint64_t)args->proxyStep.transSize, __ATOMIC_RELAXED);
}

/* ---- the tables' functions ---- */

static int start_host_event(struct rs_gpu_context* ctx, void** handle, uint64_t type,
                            const struct task* t) {
  rs_gpu_mask_enter();
  switch (type) {
    case ncclProfileCollApi:
      *handle = api_start(ctx, 0);
      break;
    case ncclProfileP2pApi:
      *handle = api_start(ctx, 1);
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
    default: /* GroupApi */
      break;
  }
  rs_gpu_mask_leave();
  return NCCL_SUCCESS;
}

static int start_device_event(void** handle, uint64_t type, const void* parent, uint64_t ptimer,
                              pid_t proxy_pid) {
  switch (type) {
    case ncclProfileKernelCh:
      *handle = kernel_ch_start(parent, ptimer);
      break;
    case ncclProfileProxyOp: {
      const struct rs_gpu_ring_header* h = rs_gpu_region_header();
      if (h != NULL && proxy_pid == h->pid) { /* another process's parent is no handle of ours */
        *handle = child_start(parent, RS_GPU_H_TASK, RS_GPU_H_PROXY_OP);
      }
      break;
    }
    case ncclProfileProxyStep:
      *handle = child_start(parent, RS_GPU_H_PROXY_OP, RS_GPU_H_PROXY_STEP);
      break;
    default: /* ProxyCtrl, NetPlugin */
      break;
  }
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
      release(handle, 1);
      rs_gpu_mask_leave();
      break;
    case RS_GPU_H_KERNEL_CH:
      kernel_ch_stop(handle);
      break;
    case RS_GPU_H_PROXY_OP:
    case RS_GPU_H_PROXY_STEP:
      release(handle, 1);
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
        kernel_ch_stopped_at(handle, args->kernelCh.pTimer);
      }
      break;
    case RS_GPU_H_PROXY_STEP:
      proxy_step_state(handle, state, args);
      break;
    default:
      break;
  }
  return NCCL_SUCCESS;
}

static int finalize(void* context) {
  finalize_context((struct rs_gpu_context*)context);
  return NCCL_SUCCESS;
}

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
  struct task t;
  memset(&t, 0, sizeof(t));
  t.parent = d->parentObj;
  switch (d->type) {
    case ncclProfileKernelCh:
      return start_device_event(handle, d->type, d->parentObj, d->kernelCh.pTimer, 0);
    case ncclProfileProxyOp:
      return start_device_event(handle, d->type, d->parentObj, 0, d->proxyOp.pid);
    case ncclProfileProxyStep:
    case ncclProfileProxyCtrl:
    case ncclProfileNetPlugin:
      return start_device_event(handle, d->type, d->parentObj, 0, 0);
    case ncclProfileColl:
      t.func = d->coll.func;
      t.datatype = d->coll.datatype;
      t.algo = d->coll.algo;
      t.proto = d->coll.proto;
      t.count = d->coll.count;
      t.nccl_seq = d->coll.seqNumber;
      t.root = d->coll.root;
      t.channels = d->coll.nChannels;
      break;
    case ncclProfileP2p:
      t.p2p = 1;
      t.func = d->p2p.func;
      t.datatype = d->p2p.datatype;
      t.count = d->p2p.count;
      t.peer = d->p2p.peer;
      t.channels = d->p2p.nChannels;
      break;
    default:
      break;
  }
  return start_host_event(ctx, handle, d->type, &t);
}

EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {
    "rankscope", init_v5, start_v5, stop_event, record_event_state, finalize,
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
  struct task t;
  memset(&t, 0, sizeof(t));
  t.parent = d->parentObj;
  switch (d->type) {
    case ncclProfileKernelCh:
      return start_device_event(handle, d->type, d->parentObj, d->kernelCh.pTimer, 0);
    case ncclProfileProxyOp:
      return start_device_event(handle, d->type, d->parentObj, 0, d->proxyOp.pid);
    case ncclProfileProxyStep:
    case ncclProfileProxyCtrl:
    case ncclProfileNetPlugin:
      return start_device_event(handle, d->type, d->parentObj, 0, 0);
    case ncclProfileColl:
      t.func = d->coll.func;
      t.datatype = d->coll.datatype;
      t.algo = d->coll.algo;
      t.proto = d->coll.proto;
      t.count = d->coll.count;
      t.nccl_seq = d->coll.seqNumber;
      t.root = d->coll.root;
      t.channels = d->coll.nChannels;
      break;
    case ncclProfileP2p:
      t.p2p = 1;
      t.func = d->p2p.func;
      t.datatype = d->p2p.datatype;
      t.count = d->p2p.count;
      t.peer = d->p2p.peer;
      t.channels = d->p2p.nChannels;
      break;
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
