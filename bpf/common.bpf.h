/* Shared by every rankscope BPF program: the ABI version knob, the scope knob, the per-CPU
 * stats map and ring-buffer helpers that count every reserve failure. */
#ifndef RANKSCOPE_COMMON_BPF_H_
#define RANKSCOPE_COMMON_BPF_H_

#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "common.h"

char LICENSE[] SEC("license") = "GPL";

/* Read by user space after open: must equal its RS_BPF_ABI_VERSION. */
const volatile __u32 abi_version = RS_BPF_ABI_VERSION;
/* --scope netns: inode of the recorder's network namespace; 0 = whole host. */
const volatile __u64 scope_netns = 0;

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, RS_STAT_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} stats SEC(".maps");

static __always_inline void rs_count(__u32 idx) {
  __u64* v = bpf_map_lookup_elem(&stats, &idx);
  if (v) *v += 1;
}

/* Wake the consumer only when this much is pending; it also drains on a short timer, so
 * quiet sources still arrive within one poll interval (adaptive wakeup, far fewer wakeups
 * under load). */
#define RS_WAKEUP_BYTES (256 * 1024)

#define RS_RESERVE(rb, type)                                   \
  ({                                                           \
    type* rs_e_ = bpf_ringbuf_reserve(&(rb), sizeof(type), 0); \
    if (!rs_e_) rs_count(RS_STAT_DROPS);                       \
    rs_e_;                                                     \
  })

#define RS_SUBMIT(rb, e)                                                           \
  do {                                                                             \
    long rs_flags_ = bpf_ringbuf_query(&(rb), BPF_RB_AVAIL_DATA) > RS_WAKEUP_BYTES \
                         ? BPF_RB_FORCE_WAKEUP                                     \
                         : BPF_RB_NO_WAKEUP;                                       \
    bpf_ringbuf_submit((e), rs_flags_);                                            \
    rs_count(RS_STAT_EVENTS);                                                      \
  } while (0)

static __always_inline __u64 rs_task_netns(struct task_struct* task) {
  return BPF_CORE_READ(task, nsproxy, net_ns, ns.inum);
}

/* True when the current task is inside the recording scope. */
static __always_inline bool rs_current_in_scope(void) {
  if (!scope_netns) return true;
  struct task_struct* task = (struct task_struct*)bpf_get_current_task();
  return rs_task_netns(task) == scope_netns;
}

#endif /* RANKSCOPE_COMMON_BPF_H_ */
