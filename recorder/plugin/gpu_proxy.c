#include "recorder/plugin/gpu_proxy.h"

#include "recorder/plugin/gpu_atomic.h"
#include "recorder/plugin/gpu_handle.h"
#include "recorder/plugin/gpu_operation.h"
#include "recorder/plugin/gpu_region.h"
#include "recorder/plugin/gpu_ring.h"
#include "recorder/plugin/gpu_slots.h"

/* The peer in a ProxyOp handle's bits 48-59 (the slot and generation below): peer + 1, or 0
 * for none / a peer past rank 4094, which the payload cannot hold. The step handle holds its
 * timing entry's index there instead. */
#define EXTRA_SHIFT 48
#define EXTRA_MASK 0xfffu
#define UNTIMED EXTRA_MASK /* a step handle's index when proxy times are off */

enum phase {
  PHASE_NONE = 0, /* started, no state yet (a receive being posted) */
  PHASE_SEND_GPU,
  PHASE_SEND_PEER,
  PHASE_SEND_NET,
  PHASE_RECV_NET,
  PHASE_RECV_GPU
};

/* Written by the proxy thread of the step's device. The fields are accessed atomically
 * (relaxed): when the table wraps onto a step still running on another device's proxy thread
 * (more than RS_GPU_STEP_ENTRIES steps in flight in the process), both threads may write one
 * entry; the values may then mix, which end_phase bounds, but nothing is undefined. */
struct step_entry {
  uint64_t owner;   /* the step handle's payload: slot, generation, entry index */
  int64_t since_ns; /* when the current phase began */
  uint32_t phase;
  int32_t peer;
};

static struct step_entry entries[RS_GPU_STEP_ENTRIES];
static uint32_t next_entry;

static uint32_t extra_bits(const void* h) {
  return (uint32_t)(rs_gpu_handle_payload(h) >> EXTRA_SHIFT) & EXTRA_MASK;
}

static void* with_extra(const void* h, uint32_t extra) {
  const uint64_t base = rs_gpu_handle_payload(h) & ((1ull << EXTRA_SHIFT) - 1);
  return rs_gpu_handle_make(rs_gpu_handle_kind(h), base | ((uint64_t)extra << EXTRA_SHIFT));
}

void* rs_gpu_proxy_op_start(const void* parent, int peer) {
  void* h = rs_gpu_operation_child_start(parent, RS_GPU_H_TASK, RS_GPU_H_PROXY_OP);
  if (h == NULL) return NULL;
  const uint32_t named = peer >= 0 && peer < (int)EXTRA_MASK ? (uint32_t)peer + 1 : 0;
  return with_extra(h, named);
}

/* A step takes no reference on its operation: its ProxyOp holds one until all of its steps
 * stopped (net.cc stops the ProxyOp once every sub's steps are done). NCCL starts a receive step
 * again, overwriting its handle, whenever the network turned its irecv down; a reference per
 * start would never be dropped for those and keep the operation from being written. */
void* rs_gpu_proxy_step_start(const void* parent) {
  if (rs_gpu_handle_kind(parent) != RS_GPU_H_PROXY_OP) return NULL; /* an unrecorded operation */
  if (rs_gpu_slot_live(parent) == NULL) {
    rs_gpu_operation_count_late();
    return NULL;
  }
  void* h = rs_gpu_slot_handle(RS_GPU_H_PROXY_STEP, rs_gpu_handle_slot(parent),
                               rs_gpu_handle_gen(parent));
  const struct rs_gpu_ring_header* header = rs_gpu_region_header();
  if (header != NULL && header->proxy_times_off) return with_extra(h, UNTIMED);
  const uint32_t index = __atomic_fetch_add(&next_entry, 1, __ATOMIC_RELAXED) % RS_GPU_STEP_ENTRIES;
  h = with_extra(h, index);
  struct step_entry* e = &entries[index];
  __atomic_store_n(&e->owner, rs_gpu_handle_payload(h), __ATOMIC_RELAXED);
  __atomic_store_n(&e->phase, PHASE_NONE, __ATOMIC_RELAXED);
  __atomic_store_n(&e->since_ns, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&e->peer, (int32_t)extra_bits(parent) - 1, __ATOMIC_RELAXED);
  return h;
}

/* The step's entry; NULL for an untimed step, or (the operation flagged) when a later step
 * took it. */
static struct step_entry* entry_of(const void* handle, struct rs_gpu_op* op) {
  const uint32_t index = extra_bits(handle);
  if (index >= RS_GPU_STEP_ENTRIES) return NULL;
  struct step_entry* e = &entries[index];
  if (__atomic_load_n(&e->owner, __ATOMIC_RELAXED) == rs_gpu_handle_payload(handle)) return e;
  __atomic_fetch_or(&op->flags, RS_GPU_PROXY_TIMES_PARTIAL, __ATOMIC_RELAXED);
  return NULL;
}

static void add(int64_t* field, int64_t ns) {
  if (ns > 0) __atomic_fetch_add(field, ns, __ATOMIC_RELAXED);
}

/* Ends the entry's phase at `now`: its time goes to the operation's sum. A phase cannot have
 * begun before its operation was enqueued: a longer one (an entry two threads wrote) is left
 * out and the operation flagged. */
static void end_phase(struct rs_gpu_op* op, struct step_entry* e, int64_t now) {
  const int64_t ns = now - __atomic_load_n(&e->since_ns, __ATOMIC_RELAXED);
  if (ns < 0 || ns > now - __atomic_load_n(&op->enqueue_ns, __ATOMIC_RELAXED)) {
    __atomic_fetch_or(&op->flags, RS_GPU_PROXY_TIMES_PARTIAL, __ATOMIC_RELAXED);
    return;
  }
  switch (__atomic_load_n(&e->phase, __ATOMIC_RELAXED)) {
    case PHASE_SEND_GPU:
      add(&op->send_gpu_wait_ns, ns);
      break;
    case PHASE_SEND_PEER:
      add(&op->send_peer_wait_ns, ns);
      break;
    case PHASE_SEND_NET: {
      add(&op->send_net_ns, ns);
      if (rs_gpu_atomic_max(&op->net_step_max_ns, ns)) {
        __atomic_store_n(&op->net_step_max_peer, __atomic_load_n(&e->peer, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
      }
      break;
    }
    case PHASE_RECV_NET:
      add(&op->recv_net_wait_ns, ns);
      break;
    case PHASE_RECV_GPU:
      add(&op->recv_gpu_wait_ns, ns);
      break;
    default:
      break;
  }
}

/* The phase a state begins; PHASE_NONE for one that begins none (RecvFlushWait: the receive's
 * network phase goes on through NCCL's flush). */
static enum phase phase_of(ncclProfilerEventState_t state) {
  switch (state) {
    case ncclProfilerProxyStepSendGPUWait:
      return PHASE_SEND_GPU;
    case ncclProfilerProxyStepSendPeerWait_v4:
      return PHASE_SEND_PEER;
    case ncclProfilerProxyStepSendWait:
      return PHASE_SEND_NET;
    case ncclProfilerProxyStepRecvWait:
      return PHASE_RECV_NET;
    case ncclProfilerProxyStepRecvGPUWait:
      return PHASE_RECV_GPU;
    default:
      return PHASE_NONE;
  }
}

void rs_gpu_proxy_step_state(const void* handle, ncclProfilerEventState_t state,
                             const ncclProfilerEventStateArgs_v5_t* args) {
  rs_gpu_operation_proxy_step_state(handle, state, args);
  const enum phase next = phase_of(state);
  if (next == PHASE_NONE) return;
  struct rs_gpu_op* op = rs_gpu_slot_live(handle);
  if (op == NULL) return; /* counted late by the bytes above */
  struct step_entry* e = entry_of(handle, op);
  if (e == NULL) return;
  const uint32_t phase = __atomic_load_n(&e->phase, __ATOMIC_RELAXED);
  if (phase == (uint32_t)next) return; /* a phase going on */
  const int64_t now = rs_gpu_now_ns();
  if (phase != PHASE_NONE) end_phase(op, e, now);
  __atomic_store_n(&e->phase, (uint32_t)next, __ATOMIC_RELAXED);
  __atomic_store_n(&e->since_ns, now, __ATOMIC_RELAXED);
}

void rs_gpu_proxy_step_stop(const void* handle) {
  struct rs_gpu_op* op = rs_gpu_slot_live(handle);
  if (op == NULL) {
    rs_gpu_operation_count_late();
    return;
  }
  struct step_entry* e = entry_of(handle, op);
  if (e == NULL) return;
  if (__atomic_load_n(&e->phase, __ATOMIC_RELAXED) != PHASE_NONE) {
    end_phase(op, e, rs_gpu_now_ns());
    __atomic_fetch_add(&op->proxy_steps, 1, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&e->owner, 0, __ATOMIC_RELAXED);
}
