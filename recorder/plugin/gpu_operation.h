/* One operation from its enqueue to its record: filled into a slot when NCCL enqueues it
 * (gpu_slots.h), updated by the events of its kernel channels and proxy operations, and
 * written to the ring (gpu_region.h) with its device times on the host clock (gpu_clock.h)
 * when the last of its parts stopped, or when its communicator is finalized. Every function
 * here may run on NCCL's host or proxy thread: none waits or allocates. */
#ifndef RANKSCOPE_GPU_OPERATION_H_
#define RANKSCOPE_GPU_OPERATION_H_

#include <stdint.h>

#include "recorder/plugin/gpu_context.h"
#include "recorder/plugin/gpu_handle.h"
#include "rscore/nccl_profiler.h"

/* A Coll or P2p event of either API version, as NCCL described it. */
struct rs_gpu_task {
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
  uint64_t user_tag;  /* v7 */
  uint32_t flags;     /* v7: RS_GPU_V7_TASK, RS_GPU_SYMMETRIC_KERNEL */
  int graph_captured; /* v5+ API events: NCCL's graphCaptured */
  const void* parent; /* v5+: the CollApi / P2pApi handle */
};

/* Where the plugin placed the operation among its communicator's (gpu_plugin.c). */
struct rs_gpu_numbering {
  uint64_t seq;            /* the record's seq (0: not numbered) */
  uint64_t graph_call_seq; /* RS_GPU_GRAPH_REPLAY: the captured call's number */
  int64_t api_ns;          /* its API call's time; 0: not seen (a replay has none) */
  uint32_t flags;          /* RS_GPU_SEQ_LAUNCH_ORDER, RS_GPU_GRAPH_REPLAY */
};

/* The operation in a slot, ENQUEUED; its handle (RS_GPU_H_TASK), or NULL when every slot is
 * in use (counted). */
void* rs_gpu_operation_enqueue(struct rs_gpu_context* ctx, const struct rs_gpu_task* t,
                               const struct rs_gpu_numbering* n, int64_t enqueue_ns, int32_t tid);
/* The host's Coll/P2p stop, a kernel channel's or proxy operation's stop: one reference less. */
void rs_gpu_operation_release(const void* handle);
/* An event for an operation already written (the header's drops_late_event). */
void rs_gpu_operation_count_late(void);
/* A kernel channel or proxy operation (parent: the task), holding a reference until it stops. */
void* rs_gpu_operation_child_start(const void* parent, enum rs_gpu_handle_kind parent_kind,
                                   enum rs_gpu_handle_kind kind);
/* A kernel channel: its start (device time), its KernelChStop state, its stop. */
void* rs_gpu_operation_kernel_ch_start(const void* parent, uint64_t ptimer);
void rs_gpu_operation_kernel_ch_stopped_at(const void* handle, uint64_t ptimer);
void rs_gpu_operation_kernel_ch_stop(const void* handle);
/* v7: a kernel phase (parent: its kernel channel) and its KernelPhaseStop state. */
void* rs_gpu_operation_kernel_phase_start(const void* parent, uint32_t phase, uint64_t ptimer);
void rs_gpu_operation_kernel_phase_stopped_at(const void* handle, uint64_t ptimer);
/* A proxy step's state: its bytes. */
void rs_gpu_operation_proxy_step_state(const void* handle, ncclProfilerEventState_t state,
                                       const ncclProfilerEventStateArgs_v5_t* args);
/* Writes every operation of ctx still in flight, with its state and RS_GPU_FINALIZED. */
void rs_gpu_operation_finalize(struct rs_gpu_context* ctx);

#endif /* RANKSCOPE_GPU_OPERATION_H_ */
