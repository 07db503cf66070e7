// NCCL API calls: one uprobe + uretprobe pair per function of each libnccl copy, all sharing
// these two programs; the attach cookie tells the function (enum nccl_fn) and what to read
// besides the registers. Decoding per function happens in user space (nccl_probe.cc).
#include "call_probe.bpf.h"
#include "nccl.h"

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4 * 1024 * 1024);
} nccl_events SEC(".maps");

// One slot per thread (key: tid); exit_ns == 0 while its call is active. What is active at
// the end of recording is in flight.
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, struct nccl_event);
} nccl_active SEC(".maps");

// A zeroed event to create a thread's slot from (too large for the 512-byte BPF stack).
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct nccl_event);
} nccl_zero SEC(".maps");

SEC("uprobe")
int nccl_entry(struct pt_regs* ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32, tid = (__u32)id;
  __u64 sp = PT_REGS_SP(ctx);

  struct nccl_event* e = bpf_map_lookup_elem(&nccl_active, &tid);
  if (e && e->exit_ns == 0 && !entry_is_outermost(sp, e->regs.sp, &e->tail_calls, &e->exit_ns)) {
    return 0;
  }
  if (!e || e->pid != tgid) {  // the thread's first call (or a recycled thread id)
    if (!call_selected(tgid)) return 0;
    if (!e) {
      __u32 zero = 0;
      struct nccl_event* z = bpf_map_lookup_elem(&nccl_zero, &zero);
      if (!z) return 0;
      bpf_map_update_elem(&nccl_active, &tid, z, BPF_NOEXIST);
      e = bpf_map_lookup_elem(&nccl_active, &tid);
      if (!e) return 0;
    }
    e->flags = CALL_FLAG_WAKE;
  }
  __u64 cookie = bpf_get_attach_cookie(ctx);
  CALL_EVENT_START(e, cookie, tgid, tid);
  e->n_out = 0;
  read_call_regs(ctx, &e->regs);
  if (cookie & NCCL_READ_UNIQUE_ID) {
    bpf_probe_read_user(e->unique_id, sizeof(e->unique_id), (void*)(sp + 8));
  }
  e->entry_ns = bpf_ktime_get_ns();
  return 0;
}

static __always_inline void read_outputs(struct nccl_event* e) {
  if (e->ret != 0 && e->ret != 7 /* ncclInProgress: non-blocking init */) return;
  if (e->cookie & NCCL_OUT_ARG0) {
    bpf_probe_read_user(&e->out[0], sizeof(__u64), (void*)e->regs.arg[0]);
    e->n_out = 1;
  } else if (e->cookie & NCCL_OUT_ARG3) {
    bpf_probe_read_user(&e->out[0], sizeof(__u64), (void*)e->regs.arg[3]);
    e->n_out = 1;
  } else if (e->cookie & NCCL_OUT_ARG1_INT) {
    __s32 v = 0;
    bpf_probe_read_user(&v, sizeof(v), (void*)e->regs.arg[1]);
    e->out[0] = (__u64)(__s64)v;
    e->n_out = 1;
  } else if (e->cookie & NCCL_OUT_ARG0_ARRAY) {
    __s32 n = (__s32)e->regs.arg[1];
    if (n > NCCL_MAX_OUT) n = NCCL_MAX_OUT;
    if (n < 0) n = 0;
#pragma unroll
    for (int i = 0; i < NCCL_MAX_OUT; i++) {
      if (i < n) bpf_probe_read_user(&e->out[i], sizeof(__u64), (void*)(e->regs.arg[0] + 8 * i));
    }
    e->n_out = n;
  }
}

SEC("uretprobe")
int nccl_return(struct pt_regs* ctx) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct nccl_event* e = bpf_map_lookup_elem(&nccl_active, &tid);
  if (!e || e->exit_ns != 0) return 0;  // not selected, or no call active
  if (!return_matches(PT_REGS_SP(ctx), e->regs.sp, &e->tail_calls)) return 0;
  e->exit_ns = bpf_ktime_get_ns();
  e->ret = (__s64)(__s32)PT_REGS_RC(ctx);
  read_outputs(e);
  // The unique id is sent only by the functions that read it (it is the struct's tail).
  __u64 size = (e->cookie & NCCL_READ_UNIQUE_ID) ? sizeof(*e) : offsetof(struct nccl_event, unique_id);
  if (bpf_ringbuf_output(&nccl_events, e, size, wakeup_flags(&nccl_events, e->pid, &e->flags, size)) != 0) {
    count_stat(CALL_STAT_RB_FULL);
  }
  return 0;
}
