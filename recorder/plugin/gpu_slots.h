/* Operations in flight: the region's slots (gpu_ring.h), taken from a lock-free free list
 * when NCCL enqueues an operation and given back when it is written to the ring.
 *
 * Each slot has a state word, generation << 32 | references. An operation holds a reference
 * for the host (until its Coll/P2p event stops), one for the device (until as many kernel
 * channels stopped as NCCL planned), and one per open child event (kernel channel, proxy
 * operation, proxy step). The thread that drops the last reference writes the record and
 * frees the slot; freeing moves the generation on, so a handle of the operation that arrives
 * later (it carries the generation, gpu_handle.h) is recognised as late and touches nothing.
 * Finalize claims a slot that is still referenced (its device events never came) the same
 * way. Nothing here waits or allocates. */
#ifndef RANKSCOPE_GPU_SLOTS_H_
#define RANKSCOPE_GPU_SLOTS_H_

#include <stdint.h>

#include "recorder/plugin/gpu_ring.h"

/* What the plugin keeps about an operation besides its record. */
struct rs_gpu_slot_info {
  void* owner;               /* the communicator's context */
  int64_t launch_ns;         /* the kernel launch before it (v5), 0 if none */
  int64_t start_cb_ns;       /* host time of the callback that reported the first channel start */
  int64_t end_cb_ns;         /* ... of the latest channel stop */
  int64_t recv_delivered_ns; /* the latest RecvGPUWait state of its receive steps (host time
                              * of the callback); 0 if none (gpu_clock.c: the second kind of
                              * upper bound) */
  uint32_t stops_timed;      /* channel stops that carried a device time */
};

/* All slots free (a new region); generations move on so no older handle matches. */
void rs_gpu_slots_reset(void);
/* A free slot with its record zeroed and 2 references (host, device); NULL if all are in
 * use. The caller fills the record and then publishes it. */
struct rs_gpu_op* rs_gpu_slot_take(void* owner, uint32_t* index, uint32_t* gen);
void rs_gpu_slot_publish(uint32_t index, uint32_t gen);
struct rs_gpu_slot_info* rs_gpu_slot_info(uint32_t index);
/* A new reference for a child event of the operation the handle names; NULL if it was
 * already written (late). */
struct rs_gpu_op* rs_gpu_slot_acquire(const void* handle);
/* The record the handle names if the operation is still in flight (no new reference). */
struct rs_gpu_op* rs_gpu_slot_live(const void* handle);
/* Drops n references: 1 when this dropped the last (the caller writes the record and frees
 * the slot), 0 when others remain, -1 when the handle is late. */
int rs_gpu_slot_release(const void* handle, uint32_t n);
/* Finalize: takes over slot index if it is in flight for owner (1: the caller writes the
 * record and frees the slot). */
int rs_gpu_slot_claim(uint32_t index, const void* owner);
/* Gives the slot back (its record must have been written). */
void rs_gpu_slot_free(uint32_t index);

#endif /* RANKSCOPE_GPU_SLOTS_H_ */
