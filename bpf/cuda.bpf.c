// CUDA runtime (libcudart) and driver (libcuda) API calls: one uprobe + uretprobe pair per
// function of each library copy, sharing these two programs; the attach cookie tells the
// function (enum cuda_fn) and flags. Kernel launches are sampled 1-in-`launch_sample`.
// Runtime and driver calls have separate entry slots: a runtime call that calls into the
// driver is recorded at both layers (library 'cudart' and 'cuda').
#include "call_probe.bpf.h"
#include "cuda.h"

const volatile __u32 launch_sample = 1;  // --cuda-launch-sample N (1 = every launch)

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 8 * 1024 * 1024);
} cuda_events SEC(".maps");

// One slot per (thread, layer): key = tid | layer << 32, layer 1 = driver; exit_ns == 0 while
// its call is active. What is active at the end of recording is in flight.
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u64);
  __type(value, struct cuda_event);
} cuda_active SEC(".maps");

// Per-CPU launch counter for sampling.
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} launch_counter SEC(".maps");

static __always_inline __u64 slot_key(__u32 tid, __u64 cookie) {
  return (__u64)tid | ((cookie & CUDA_DRIVER) ? (1ULL << 32) : 0);
}

SEC("uprobe")
int cuda_entry(struct pt_regs* ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32, tid = (__u32)id;
  __u64 cookie = bpf_get_attach_cookie(ctx);
  __u64 key = slot_key(tid, cookie);
  __u64 sp = PT_REGS_SP(ctx);

  struct cuda_event* e = bpf_map_lookup_elem(&cuda_active, &key);
  if (e && e->exit_ns == 0 && !entry_is_outermost(sp, e->regs.sp, &e->tail_calls, &e->exit_ns)) {
    return 0;
  }
  const bool new_thread = !e || e->pid != tgid;  // its first call (or a recycled thread id)
  if (new_thread && !call_selected(tgid)) return 0;
  if ((cookie & CUDA_LAUNCH) && launch_sample > 1) {
    __u32 zero = 0;
    __u64* n = bpf_map_lookup_elem(&launch_counter, &zero);
    if (!n) return 0;
    *n += 1;
    if (*n % launch_sample != 0) {
      count_stat(CALL_STAT_SAMPLED_OUT);
      return 0;
    }
  }
  if (!e) {  // the thread's first call: create its slot
    struct cuda_event zeroed = {};
    bpf_map_update_elem(&cuda_active, &key, &zeroed, BPF_NOEXIST);
    e = bpf_map_lookup_elem(&cuda_active, &key);
    if (!e) return 0;
  }
  if (new_thread) e->flags = CALL_FLAG_WAKE;
  CALL_EVENT_START(e, cookie, tgid, tid);
  e->sample_weight = (cookie & CUDA_LAUNCH) ? launch_sample : 1;
  e->out = 0;
  read_call_regs(ctx, &e->regs);
  if (cookie & CUDA_CONFIG_STREAM) {
    bpf_probe_read_user(&e->out, sizeof(e->out), (void*)(e->regs.arg[0] + 32));
  }
  e->entry_ns = bpf_ktime_get_ns();
  return 0;
}

SEC("uretprobe")
int cuda_return(struct pt_regs* ctx) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  __u64 key = slot_key(tid, bpf_get_attach_cookie(ctx));
  struct cuda_event* e = bpf_map_lookup_elem(&cuda_active, &key);
  if (!e || e->exit_ns != 0) return 0;  // not selected, sampled out, or no call active
  if (!return_matches(PT_REGS_SP(ctx), e->regs.sp, &e->tail_calls)) return 0;
  e->exit_ns = bpf_ktime_get_ns();
  e->ret = (__s64)(__s32)PT_REGS_RC(ctx);
  if ((e->cookie & CUDA_OUT_ARG0) && e->ret == 0) {
    bpf_probe_read_user(&e->out, sizeof(e->out), (void*)e->regs.arg[0]);
  }
  if (bpf_ringbuf_output(&cuda_events, e, sizeof(*e), wakeup_flags(&cuda_events, e->pid, &e->flags, sizeof(*e))) != 0) {
    count_stat(CALL_STAT_RB_FULL);
  }
  return 0;
}
