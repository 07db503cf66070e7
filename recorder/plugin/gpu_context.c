#include "recorder/plugin/gpu_context.h"

#include <stdlib.h>
#include <string.h>

#include "recorder/plugin/gpu_region.h"

struct rs_gpu_context* rs_gpu_context_new(uint64_t comm_hash, int rank, int nranks,
                                          int api_version) {
  const size_t peers = nranks > 0 ? (size_t)nranks : 0;
  struct rs_gpu_context* ctx = malloc(sizeof(*ctx) + 2 * peers * sizeof(uint64_t));
  if (ctx == NULL) return NULL;
  memset(ctx, 0, sizeof(*ctx) + 2 * peers * sizeof(uint64_t));
  ctx->region_generation = rs_gpu_region_generation();
  ctx->comm_hash = comm_hash;
  ctx->rank = rank;
  ctx->nranks = nranks;
  ctx->api_version = api_version;
  rs_gpu_clock_init(&ctx->clock);
  return ctx;
}

/* Contexts of finalized communicators, freed only RS_GPU_RETIRED finalizations later: NCCL's
 * proxy thread may still be inside a KernelCh or ProxyOp callback of the communicator when
 * finalize runs (it reads the context's clock), and such a callback ends within microseconds.
 * Bounded: at most RS_GPU_RETIRED contexts wait. */
#define RS_GPU_RETIRED 16
static struct rs_gpu_context* g_retired[RS_GPU_RETIRED];
static uint64_t g_retired_count;

void rs_gpu_context_retire(struct rs_gpu_context* ctx) {
  if (ctx == NULL) return;
  const uint64_t i = __atomic_fetch_add(&g_retired_count, 1, __ATOMIC_RELAXED) % RS_GPU_RETIRED;
  free(__atomic_exchange_n(&g_retired[i], ctx, __ATOMIC_ACQ_REL));
}

int rs_gpu_context_usable(const struct rs_gpu_context* ctx) {
  return ctx != NULL && ctx->region_generation == rs_gpu_region_generation() &&
         rs_gpu_region_header() != NULL;
}

uint64_t rs_gpu_context_api_call(struct rs_gpu_context* ctx, int p2p, int64_t now_ns) {
  uint64_t* calls = p2p ? &ctx->p2p_calls : &ctx->coll_calls;
  const uint64_t number = __atomic_add_fetch(calls, 1, __ATOMIC_RELAXED);
  struct rs_gpu_api_time* t = (p2p ? ctx->p2p_api : ctx->coll_api) + number % RS_GPU_API_TIMES;
  __atomic_store_n(&t->number, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&t->ns, now_ns, __ATOMIC_RELEASE);
  __atomic_store_n(&t->number, number, __ATOMIC_RELEASE);
  return number;
}

int64_t rs_gpu_context_api_ns(const struct rs_gpu_context* ctx, int p2p, uint64_t number) {
  const struct rs_gpu_api_time* t =
      (p2p ? ctx->p2p_api : ctx->coll_api) + number % RS_GPU_API_TIMES;
  if (__atomic_load_n(&t->number, __ATOMIC_ACQUIRE) != number) return 0;
  const int64_t ns = __atomic_load_n(&t->ns, __ATOMIC_ACQUIRE);
  return __atomic_load_n(&t->number, __ATOMIC_ACQUIRE) == number ? ns : 0;
}

uint64_t rs_gpu_context_p2p_seq(struct rs_gpu_context* ctx, int send, int peer) {
  if (peer < 0 || peer >= ctx->nranks) return 0;
  uint64_t* counter = &ctx->p2p_seq[(send ? 0 : ctx->nranks) + peer];
  return __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}
