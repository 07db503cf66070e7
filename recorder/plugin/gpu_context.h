/* The plugin's context of one communicator (init's *context): identity, the counters that
 * number its operations, the host times of its API calls, its latest kernel launch and its
 * clock calibration. One allocation at init, O(nranks) for the send/receive counters. */
#ifndef RANKSCOPE_GPU_CONTEXT_H_
#define RANKSCOPE_GPU_CONTEXT_H_

#include <stdint.h>

#include "recorder/plugin/gpu_clock.h"

#define RS_GPU_API_TIMES 64 /* API calls whose time is kept until their launch */

struct rs_gpu_api_time {
  uint64_t number; /* atomic: the call's number, written after ns */
  int64_t ns;      /* atomic */
};

struct rs_gpu_context {
  uint64_t region_generation; /* the region it was made for (gpu_region.h) */
  uint64_t comm_hash;
  int32_t rank;
  int32_t nranks;
  int api_version;
  uint64_t coll_calls;    /* atomic: v5 CollApi events, v4 Coll events */
  uint64_t p2p_calls;     /* atomic: v5 P2pApi events */
  uint64_t graph_replays; /* atomic: collectives of CUDA graph replays (gpu_plugin.c) */
  int p2p_captured;       /* atomic: a send / receive was captured into a graph */
  struct rs_gpu_api_time coll_api[RS_GPU_API_TIMES];
  struct rs_gpu_api_time p2p_api[RS_GPU_API_TIMES];
  int64_t launch_ns; /* atomic: host time of the latest KernelLaunch event (v5) */
  struct rs_gpu_clock clock;
  uint64_t p2p_seq[]; /* sends to peer p at [p], receives from p at [nranks + p] */
};

/* NULL if out of memory. */
struct rs_gpu_context* rs_gpu_context_new(uint64_t comm_hash, int rank, int nranks,
                                          int api_version);
/* A finalized communicator's context: freed after RS_GPU_RETIRED more (gpu_context.c), so that
 * a device callback still running on NCCL's proxy thread reads valid memory. */
void rs_gpu_context_retire(struct rs_gpu_context* ctx);
/* Not made for a region a forked child forgot. */
int rs_gpu_context_usable(const struct rs_gpu_context* ctx);

/* The next number of an API call (from 1), its time kept. */
uint64_t rs_gpu_context_api_call(struct rs_gpu_context* ctx, int p2p, int64_t now_ns);
/* The time of API call `number`, 0 if it is no longer kept. */
int64_t rs_gpu_context_api_ns(const struct rs_gpu_context* ctx, int p2p, uint64_t number);
/* The next number of a send (send != 0) to / receive from peer, from 1; 0 for a peer
 * outside the communicator. */
uint64_t rs_gpu_context_p2p_seq(struct rs_gpu_context* ctx, int send, int peer);

#endif /* RANKSCOPE_GPU_CONTEXT_H_ */
