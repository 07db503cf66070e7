/* NCCL's network proxy as the plugin sees it: a ProxyOp event per channel, peer and
 * direction of an operation, a ProxyStep event per network transfer of it, and the step's
 * states in the order NCCL's net transport records them (NCCL 2.28-2.31, src/transport/net.cc):
 *   send:    start, SendGPUWait (buffer posted to the kernel), SendPeerWait (the kernel filled
 *            it; recorded again at every isend the receiving peer's missing credit turned
 *            down), SendWait (the network took it), stop (the network completed it);
 *   receive: start (again at every irecv the network turned down), RecvWait (posted),
 *            RecvFlushWait (arrived), RecvGPUWait (in device memory, given to the kernel),
 *            stop (the kernel consumed it).
 * Each step's current phase and when it began live in a fixed table of timing entries; the
 * time each phase lasted is added to the operation's record (gpu_ring.h send_gpu_wait_ns ...)
 * when the next state or the stop comes. Repeated states (a phase going on) change nothing.
 * Called only from NCCL's proxy (2.31: profiler) thread of the operation's device. Off (no
 * step timed, the sums left 0) where the process had RANKSCOPE_PLUGIN_PROXY_TIMES=0 when its
 * region was made: each timed state reads the clock once (bench_gpu_plugin). */
#ifndef RANKSCOPE_GPU_PROXY_H_
#define RANKSCOPE_GPU_PROXY_H_

#include <stdint.h>

#include "rscore/nccl_profiler.h"

/* Timing entries: a step takes the next one round the table; one taken again by a later step
 * while its step still runs leaves that step untimed (RS_GPU_PROXY_TIMES_PARTIAL). */
#define RS_GPU_STEP_ENTRIES 4095

/* The ProxyOp event of an operation (parent: its Coll / P2p handle); the peer travels in the
 * handle to its steps. NULL for an operation not recorded. */
void* rs_gpu_proxy_op_start(const void* parent, int peer);
/* A ProxyStep event (parent: a ProxyOp handle). */
void* rs_gpu_proxy_step_start(const void* parent);
/* A state of a step: its phase times, and its network bytes (send: at SendWait; receive: at
 * RecvFlushWait, NCCL sets the size just before both). */
void rs_gpu_proxy_step_state(const void* handle, ncclProfilerEventState_t state,
                             const ncclProfilerEventStateArgs_v5_t* args);
/* The step's stop: its last phase ends, its reference on the operation is dropped. */
void rs_gpu_proxy_step_stop(const void* handle);

#endif /* RANKSCOPE_GPU_PROXY_H_ */
