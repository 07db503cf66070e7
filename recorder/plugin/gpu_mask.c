#include "recorder/plugin/gpu_mask.h"

#include <stddef.h>
#include <stdint.h>

#include "rscore/nccl_profiler.h"

#define DEVICE_EVENTS (ncclProfileKernelCh | ncclProfileProxyOp | ncclProfileProxyStep)
#define MAX_NCCL_LIBS 4 /* NCCL copies in one process that loaded this plugin */
#define EPOCH_UNSET UINT64_MAX

static int g_base, g_full;               /* atomic: set at every init */
static int g_current;                    /* atomic: the value NCCL's variables hold */
static int* g_nccl_masks[MAX_NCCL_LIBS]; /* atomic pointers */
static uint64_t g_epoch;                 /* atomic: even when stable, odd while switching */

static _Thread_local uint64_t tls_seen = EPOCH_UNSET; /* the epoch at this thread's last leave */
static _Thread_local int tls_unsure;    /* the epoch moved since a read NCCL may have made */
static _Thread_local int tls_plan_full; /* v4: the current plan's tasks have device events */

/* No switch began since this thread's last callback (or ever, for a thread without one). */
static int stable_since_last(uint64_t epoch) {
  if (epoch & 1) return 0;
  return epoch == tls_seen || (tls_seen == EPOCH_UNSET && epoch == 0);
}

static void store_all(int value) {
  __atomic_store_n(&g_current, value, __ATOMIC_SEQ_CST);
  for (int i = 0; i < MAX_NCCL_LIBS; ++i) {
    int* m = __atomic_load_n(&g_nccl_masks[i], __ATOMIC_ACQUIRE);
    if (m != NULL) __atomic_store_n(m, value, __ATOMIC_SEQ_CST);
  }
}

void rs_gpu_mask_init(int* nccl_mask, int api_version) {
  /* The same values at every init of a process (its NCCL has one API version). */
  int base = api_version >= 5 ? (ncclProfileColl | ncclProfileP2p | ncclProfileCollApi |
                                 ncclProfileP2pApi | ncclProfileKernelLaunch)
                              : (ncclProfileColl | ncclProfileP2p);
  /* v6+: copy-engine collectives are counted (one event each; they carry no device time). */
  if (api_version >= 6) base |= ncclProfileCeColl;
  /* v7: the kernel's phases come with its channels' device events. */
  const int device = DEVICE_EVENTS | (api_version >= 7 ? ncclProfileKernelPhase : 0);
  __atomic_store_n(&g_full, base | device, __ATOMIC_SEQ_CST);
  __atomic_store_n(&g_base, base, __ATOMIC_SEQ_CST);
  int current = 0;
  if (__atomic_compare_exchange_n(&g_current, &current, base, 0, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST)) {
    current = base; /* the first init */
  }
  if (nccl_mask == NULL) return;
  for (int i = 0; i < MAX_NCCL_LIBS; ++i) {
    int* expected = NULL;
    int* m = __atomic_load_n(&g_nccl_masks[i], __ATOMIC_ACQUIRE);
    if (m == nccl_mask) break;
    if (m == NULL && __atomic_compare_exchange_n(&g_nccl_masks[i], &expected, nccl_mask, 0,
                                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      break;
    }
  }
  /* A switch meanwhile may have written its value before this one: write the latest. */
  for (;;) {
    __atomic_store_n(nccl_mask, current, __ATOMIC_SEQ_CST);
    const int latest = __atomic_load_n(&g_current, __ATOMIC_SEQ_CST);
    if (latest == current) break;
    current = latest;
  }
}

void rs_gpu_mask_want_full(int full) {
  const int want = __atomic_load_n(full ? &g_full : &g_base, __ATOMIC_SEQ_CST);
  if (want == 0 || __atomic_load_n(&g_current, __ATOMIC_SEQ_CST) == want) return;
  uint64_t epoch = __atomic_load_n(&g_epoch, __ATOMIC_SEQ_CST);
  if ((epoch & 1) || !__atomic_compare_exchange_n(&g_epoch, &epoch, epoch + 1, 0, __ATOMIC_SEQ_CST,
                                                  __ATOMIC_SEQ_CST)) {
    return; /* another thread is switching */
  }
  store_all(want);
  __atomic_store_n(&g_epoch, epoch + 2, __ATOMIC_SEQ_CST);
}

void rs_gpu_mask_enter(void) {
  if (!stable_since_last(__atomic_load_n(&g_epoch, __ATOMIC_SEQ_CST))) tls_unsure = 1;
}

void rs_gpu_mask_leave(void) { tls_seen = __atomic_load_n(&g_epoch, __ATOMIC_SEQ_CST); }

int rs_gpu_mask_call_full(void) {
  const int value = __atomic_load_n(&g_current, __ATOMIC_SEQ_CST);
  const int sure = !tls_unsure && stable_since_last(__atomic_load_n(&g_epoch, __ATOMIC_SEQ_CST));
  tls_unsure = 0;
  return sure && (value & ncclProfileKernelCh) != 0;
}

void rs_gpu_mask_plan_begin(void) { tls_plan_full = rs_gpu_mask_call_full(); }

int rs_gpu_mask_plan_full(void) { return tls_plan_full; }

int rs_gpu_mask_current(void) { return __atomic_load_n(&g_current, __ATOMIC_SEQ_CST); }

void rs_gpu_mask_forget(void) {
  g_epoch = 0;
  g_current = 0;
  for (int i = 0; i < MAX_NCCL_LIBS; ++i) g_nccl_masks[i] = NULL;
  tls_seen = EPOCH_UNSET;
  tls_unsure = 0;
  tls_plan_full = 0;
}
