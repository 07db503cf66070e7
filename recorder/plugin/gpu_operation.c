#include "recorder/plugin/gpu_operation.h"

#include <stddef.h>
#include <string.h>

#include "recorder/plugin/gpu_atomic.h"
#include "recorder/plugin/gpu_clock.h"
#include "recorder/plugin/gpu_names.h"
#include "recorder/plugin/gpu_region.h"
#include "recorder/plugin/gpu_ring.h"
#include "recorder/plugin/gpu_slots.h"

static void late_event(void) {
  struct rs_gpu_ring_header* h = rs_gpu_region_header();
  if (h != NULL) rs_gpu_count(&h->drops_late_event);
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

/* The second kind of upper bound of the clock offset (gpu_clock.c): a collective's last
 * channel stop came after its last network receive was handed to the GPU. Only where that
 * holds in NCCL (2.23-2.30, src/device/prims_simple.h and common.h): the SIMPLE protocol's
 * receive waits for the tail NCCL's proxy stores after recording RecvGPUWait (LL and LL128
 * read flags in the data, which RDMA can write before that state), and a RING's channel runs
 * every step with all its threads, so the thread that takes the stop time passed every
 * receive (TREE and send/receive split the threads into groups, and the stop may be taken
 * before another group's receives). Every channel must have stopped with a device time, so
 * the latest of them is on the record. */
static void bound_by_delivery(struct rs_gpu_context* ctx, const struct rs_gpu_slot_info* info,
                              const struct rs_gpu_op* rec) {
  const uint32_t needed = rec->channels > 0 ? rec->channels : 1;
  if (rec->func > RS_GPU_ALL_REDUCE || rec->algo != RS_GPU_ALGO_RING ||
      rec->proto != RS_GPU_PROTO_SIMPLE || info->recv_delivered_ns == 0 ||
      rec->device_end_raw == 0 || info->stops_timed < needed) {
    return;
  }
  rs_gpu_clock_device_after(&ctx->clock, rec->device_end_raw, info->recv_delivered_ns);
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
  if (rec.state == RS_GPU_COMPLETED) {
    bound_by_delivery((struct rs_gpu_context*)info->owner, info, &rec);
  }
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
    late_event();
  }
}

void rs_gpu_operation_release(const void* handle) { release(handle, 1); }

void rs_gpu_operation_count_late(void) { late_event(); }

void rs_gpu_operation_finalize(struct rs_gpu_context* ctx) {
  for (uint32_t i = 0; i < RS_GPU_SLOT_COUNT; ++i) {
    if (rs_gpu_slot_claim(i, ctx)) write_and_free(i, RS_GPU_FINALIZED);
  }
}

void* rs_gpu_operation_enqueue(struct rs_gpu_context* ctx, const struct rs_gpu_task* t,
                               const struct rs_gpu_numbering* n, int64_t enqueue_ns, int32_t tid) {
  uint32_t index, gen;
  struct rs_gpu_op* op = rs_gpu_slot_take(ctx, &index, &gen);
  if (op == NULL) {
    struct rs_gpu_ring_header* h = rs_gpu_region_header();
    if (h != NULL) rs_gpu_count(&h->drops_slots_full);
    return NULL;
  }
  const uint8_t func = rs_gpu_func_of(t->func);
  op->nccl_comm_hash = ctx->comm_hash;
  op->seq = n->seq;
  op->nccl_seq = t->p2p ? UINT64_MAX : t->nccl_seq;
  op->enqueue_ns = enqueue_ns;
  op->api_ns = n->api_ns;
  op->count = t->count;
  op->rank = ctx->rank;
  op->nranks = ctx->nranks;
  op->peer = t->p2p ? t->peer : (func == RS_GPU_BROADCAST || func == RS_GPU_REDUCE ? t->root : -1);
  op->tid = tid;
  op->func = func;
  op->datatype = rs_gpu_datatype_of(t->datatype);
  op->algo = rs_gpu_algo_of(t->algo);
  op->proto = rs_gpu_proto_of(t->proto);
  op->state = RS_GPU_ENQUEUED;
  op->channels = t->channels;
  op->user_tag = t->user_tag;
  op->flags = n->flags | t->flags;
  op->graph_call_seq = n->graph_call_seq <= UINT32_MAX ? (uint32_t)n->graph_call_seq : 0;
  op->net_step_max_peer = -1;
  /* The launch its kernel came after: a replay's kernel waits for the graph's host node, whose
   * callback is this event (enqueue.cc: the launch stream waits for the host stream); the
   * latest KernelLaunch event may be its capture, long before. */
  rs_gpu_slot_info(index)->launch_ns = (n->flags & RS_GPU_GRAPH_REPLAY)
                                           ? enqueue_ns
                                           : __atomic_load_n(&ctx->launch_ns, __ATOMIC_RELAXED);
  rs_gpu_slot_publish(index, gen);
  return rs_gpu_slot_handle(RS_GPU_H_TASK, index, gen);
}

/* A child event of the operation `parent` names (a reference held until it stops). */
void* rs_gpu_operation_child_start(const void* parent, enum rs_gpu_handle_kind parent_kind,
                                   enum rs_gpu_handle_kind kind) {
  if (rs_gpu_handle_kind(parent) != parent_kind) return NULL; /* an unrecorded operation */
  if (rs_gpu_slot_acquire(parent) == NULL) {
    late_event();
    return NULL;
  }
  return rs_gpu_slot_handle(kind, rs_gpu_handle_slot(parent), rs_gpu_handle_gen(parent));
}

/* A device time converted in the slot as well, so that a snapshot of the slots (an operation
 * that never completes: a hang) shows it; the record written later converts it again. */
static void convert_in_slot(struct rs_gpu_context* ctx, int64_t now, const uint64_t* raw,
                            int64_t* converted, int64_t* error) {
  const struct rs_gpu_clock_estimate e = rs_gpu_clock_at(&ctx->clock, now);
  if (!e.valid) return;
  const uint64_t r = __atomic_load_n(raw, __ATOMIC_RELAXED);
  __atomic_store_n(converted, (int64_t)r - e.offset_ns, __ATOMIC_RELAXED);
  __atomic_store_n(error, e.bounded ? e.error_ns : -1, __ATOMIC_RELAXED);
}

/* The first channel start bounds the clock offset from above by the launch before it (v5);
 * every start and stop bounds it from below by the callback's own time. */
void* rs_gpu_operation_kernel_ch_start(const void* parent, uint64_t ptimer) {
  void* handle = rs_gpu_operation_child_start(parent, RS_GPU_H_TASK, RS_GPU_H_KERNEL_CH);
  if (handle == NULL) return NULL;
  const int64_t now = rs_gpu_now_ns();
  const uint32_t index = rs_gpu_handle_slot(handle);
  struct rs_gpu_op* op = rs_gpu_region_slot(index);
  struct rs_gpu_slot_info* info = rs_gpu_slot_info(index);
  struct rs_gpu_context* ctx = info->owner;
  const int first = __atomic_fetch_add(&op->channels_started, 1, __ATOMIC_RELAXED) == 0;
  if (first) __atomic_store_n(&info->start_cb_ns, now, __ATOMIC_RELAXED);
  if (ptimer != 0) { /* 0: no device time (it would wreck the calibration) */
    if (first && info->launch_ns != 0) {
      rs_gpu_clock_device_after(&ctx->clock, ptimer, info->launch_ns);
    }
    rs_gpu_clock_device_before(&ctx->clock, ptimer, now);
    rs_gpu_atomic_min_nonzero(&op->device_start_raw, ptimer);
    convert_in_slot(ctx, now, &op->device_start_raw, &op->device_start_ns, &op->clock_error_ns);
  }
  uint8_t enqueued = RS_GPU_ENQUEUED;
  __atomic_compare_exchange_n(&op->state, &enqueued, RS_GPU_STARTED, 0, __ATOMIC_RELAXED,
                              __ATOMIC_RELAXED);
  return handle;
}

void rs_gpu_operation_kernel_ch_stopped_at(const void* handle, uint64_t ptimer) {
  struct rs_gpu_op* op = rs_gpu_slot_live(handle);
  if (op == NULL) {
    late_event();
    return;
  }
  const int64_t now = rs_gpu_now_ns();
  struct rs_gpu_slot_info* info = rs_gpu_slot_info(rs_gpu_handle_slot(handle));
  rs_gpu_atomic_max(&info->end_cb_ns, now);
  if (ptimer == 0) return; /* no device time */
  const uint64_t started = __atomic_load_n(&op->device_start_raw, __ATOMIC_RELAXED);
  if (started != 0 && ptimer < started) {
    /* The device's clock ran backwards between this operation's start and this stop (or
     * NCCL reported a stale value): neither an end nor a clock sample. */
    __atomic_fetch_or(&op->flags, RS_GPU_DEVICE_TIME_BACKWARDS, __ATOMIC_RELAXED);
    return;
  }
  struct rs_gpu_context* ctx = info->owner;
  __atomic_add_fetch(&info->stops_timed, 1, __ATOMIC_RELAXED);
  rs_gpu_atomic_max_u64(&op->device_end_raw, ptimer);
  rs_gpu_clock_device_before(&ctx->clock, ptimer, now);
  convert_in_slot(ctx, now, &op->device_end_raw, &op->device_end_ns, &op->clock_error_ns);
}

/* The channel's own reference, and the device's once as many channels stopped as planned. */
void rs_gpu_operation_kernel_ch_stop(const void* handle) {
  struct rs_gpu_op* op = rs_gpu_slot_live(handle);
  if (op == NULL) {
    late_event();
    return;
  }
  const uint8_t needed = op->channels > 0 ? op->channels : 1;
  const uint8_t stopped = __atomic_add_fetch(&op->channels_stopped, 1, __ATOMIC_RELAXED);
  /* The slot says so too: a snapshot taken while its network work or host stop is still open
   * must not show a finished kernel as running. */
  if (stopped == needed) __atomic_store_n(&op->state, RS_GPU_COMPLETED, __ATOMIC_RELAXED);
  release(handle, stopped == needed ? 2 : 1);
}

/* v7's kernel phases. NCCL 2.31 (src/plugin/profiler.cc, profilerFireKernelPhaseEvents) reports
 * a channel's phases from its profiler thread just before the channel's KernelChStop, each
 * as startEvent, recordEventState(KernelPhaseStop) and stopEvent back to back: the phase's
 * start time waits in the thread for its stop. The channel's handle holds the operation. */
static _Thread_local const void* tls_phase;
static _Thread_local uint64_t tls_phase_start;

void* rs_gpu_operation_kernel_phase_start(const void* parent, uint32_t phase, uint64_t ptimer) {
  if (rs_gpu_handle_kind(parent) != RS_GPU_H_KERNEL_CH || phase > 3) return NULL;
  void* handle = rs_gpu_phase_handle(parent, phase);
  tls_phase = handle;
  tls_phase_start = ptimer;
  return handle;
}

void rs_gpu_operation_kernel_phase_stopped_at(const void* handle, uint64_t ptimer) {
  if (handle != tls_phase) return; /* not the phase this thread started last */
  tls_phase = NULL;
  struct rs_gpu_op* op = rs_gpu_slot_live(handle);
  if (op == NULL) {
    late_event();
    return;
  }
  __atomic_fetch_or(&op->flags, RS_GPU_KERNEL_PHASES, __ATOMIC_RELAXED);
  if (tls_phase_start == 0 || ptimer < tls_phase_start) {
    if (tls_phase_start != 0)
      __atomic_fetch_or(&op->flags, RS_GPU_DEVICE_TIME_BACKWARDS, __ATOMIC_RELAXED);
    return;
  }
  const int64_t length = (int64_t)(ptimer - tls_phase_start);
  switch (rs_gpu_handle_phase(handle)) {
    case ncclProfilerKernelPhaseInitialSync:
      rs_gpu_atomic_max(&op->initial_sync_ns, length);
      break;
    case ncclProfilerKernelPhaseFinalSync:
      rs_gpu_atomic_max(&op->final_sync_ns, length);
      break;
    default:
      break;
  }
}

/* Network bytes: a send step's size when it goes on the network, a receive step's when it
 * arrived (NCCL sets the step's size just before both states; at the receive's later GPU-wait
 * state it may already hold a newer step's size). The GPU-wait state's time: NCCL records it
 * just before it lets the GPU see the step (bound_by_delivery). */
void rs_gpu_operation_proxy_step_state(const void* handle, ncclProfilerEventState_t state,
                                       const ncclProfilerEventStateArgs_v5_t* args) {
  const int sent = state == ncclProfilerProxyStepSendWait;
  const int delivered = state == ncclProfilerProxyStepRecvGPUWait;
  if (!delivered && (args == NULL || (!sent && state != ncclProfilerProxyStepRecvFlushWait))) {
    return;
  }
  struct rs_gpu_op* op = rs_gpu_slot_live(handle);
  if (op == NULL) {
    late_event();
    return;
  }
  if (delivered) {
    struct rs_gpu_slot_info* info = rs_gpu_slot_info(rs_gpu_handle_slot(handle));
    rs_gpu_atomic_max(&info->recv_delivered_ns, rs_gpu_now_ns());
    return;
  }
  uint64_t* field = sent ? &op->net_bytes_sent : &op->net_bytes_recv;
  __atomic_fetch_add(field, (uint64_t)args->proxyStep.transSize, __ATOMIC_RELAXED);
}
