/* The process's shared-memory region of gpu_ring.h: created once, at the first communicator's
 * init, as a memfd that stays open (so /proc/PID/fd shows it to the recorder) and is mapped
 * shared; the finished records go into its ring by the writer's half of the ring protocol. A
 * forked child forgets its parent's region (rs_gpu_region_forget, from the plugin's atfork
 * handler): it must not write into the parent's, and makes its own if it initializes NCCL. */
#ifndef RANKSCOPE_GPU_REGION_H_
#define RANKSCOPE_GPU_REGION_H_

#include <stdint.h>

#include "recorder/plugin/gpu_ring.h"

/* The region, created if the process has none yet (on_create runs before anyone else can
 * see it); NULL (errno set) if it cannot be made. */
struct rs_gpu_ring_header* rs_gpu_region_open(void (*on_create)(void));
/* The region if there is one, else NULL (never creates it). */
struct rs_gpu_ring_header* rs_gpu_region_header(void);
/* Changes whenever the region is forgotten (a forked child): what was made for an older one
 * is not used. */
uint64_t rs_gpu_region_generation(void);
/* The in-flight slot i of the region (i < RS_GPU_SLOT_COUNT); the region must exist. */
struct rs_gpu_op* rs_gpu_region_slot(uint32_t i);
/* Copies op (all but its stamp) into the ring: never waits, may overwrite the oldest record. */
void rs_gpu_region_write(const struct rs_gpu_op* op);
/* A recorder read the region within RS_GPU_READER_TIMEOUT_NS of now_ns, or none ever did
 * and now_ns is in the startup window (gpu_ring.h). */
int rs_gpu_region_reader_present(int64_t now_ns);
/* No recorder ever read the region and now_ns is in its startup window. */
int rs_gpu_region_in_startup_window(int64_t now_ns);
/* In the child after fork: unmaps and closes the parent's region without touching it. */
void rs_gpu_region_forget(void);

/* CLOCK_MONOTONIC in nanoseconds (the times of gpu_ring.h). */
int64_t rs_gpu_now_ns(void);

#endif /* RANKSCOPE_GPU_REGION_H_ */
