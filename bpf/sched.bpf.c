/* Scheduler capture.
 *  - Traced processes (map `traced`, filled by user space): one event per off-CPU interval
 *    (switched out -> back in) and per run-queue wait (woken or preempted -> switched in).
 *  - Everything else: per-CPU counters (switches, run-queue waits and their total / max),
 *    read by user space about once a second.
 * Intervals shorter than `min_interval_ns` are not emitted as events (they bound the event
 * rate of busy traced threads); run-queue waits of untraced tasks are always aggregated. */
#include "common.bpf.h"  // first: the vmlinux.h types the ABI header uses

#include "sched.h"

/* Default 10 us: shorter waits do not explain a training stall and dominate the rate. */
const volatile __u64 min_interval_ns = 10000;

#define RS_TASK_RUNNING 0
/* The classic sched_switch record reports a preempted task as TASK_REPORT_MAX (0x100 since
 * Linux 4.14, "sched/tracing: Use common task-state helpers"). */
#define RS_TASK_REPORT_MAX 0x100

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 8 << 20);
} sched_rb SEC(".maps");

/* tgid -> 1 for traced processes (user space: OnProcessTraced). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, __u8);
} traced SEC(".maps");

/* tid -> tgid of threads of traced processes seen so far (the classic sched_switch record
 * has no tgid for the next task). */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, __u32);
} traced_tids SEC(".maps");

/* tid -> monotonic time it became runnable. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 32768);
  __type(key, __u32);
  __type(value, __u64);
} runq_start SEC(".maps");

struct off_cpu_start {
  __u64 ts_ns;
  __u32 next_pid;
  __u32 next_tid;
  char next_comm[RS_COMM_LEN];
};

/* tid of a traced thread -> when it was switched out and who ran next. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, struct off_cpu_start);
} off_start SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct rs_sched_cpu_stats);
} cpu_stats SEC(".maps");

/* Longest untraced run-queue wait since user space last zeroed it. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} runq_max SEC(".maps");

struct task_struct___pre514 {
  long state;
} __attribute__((preserve_access_index));

/* task_struct::state became __state in Linux 5.14 (commit 2f064a59a11f, "sched: Change
 * task_struct::state"). */
static __always_inline long task_state(struct task_struct* t) {
  if (bpf_core_field_exists(t->__state)) return BPF_CORE_READ(t, __state);
  return BPF_CORE_READ((struct task_struct___pre514*)t, state);
}

static __always_inline bool is_traced_tgid(__u32 tgid) {
  return tgid && bpf_map_lookup_elem(&traced, &tgid) != NULL;
}

static __always_inline void mark_runnable(__u32 tid) {
  if (!tid) return;
  __u64 now = bpf_ktime_get_ns();
  bpf_map_update_elem(&runq_start, &tid, &now, BPF_ANY);
}

struct switch_args {
  __u32 prev_tid, prev_tgid;
  __u32 next_tid, next_tgid; /* next_tgid 0: unknown */
  bool prev_runnable;
  const char* prev_comm; /* kernel memory */
  const char* next_comm;
};

static __always_inline void emit(__u32 kind, __u64 start, __u64 now, __u32 pid, __u32 tid,
                                 __u32 other_pid, __u32 other_tid, const char* other_comm,
                                 bool comm_is_kernel) {
  struct rs_sched_event* e = RS_RESERVE(sched_rb, struct rs_sched_event);
  if (!e) return;
  e->ts_ns = start;
  e->duration_ns = now - start;
  e->kind = kind;
  e->pid = pid;
  e->tid = tid;
  e->cpu = bpf_get_smp_processor_id();
  e->other_pid = other_pid;
  e->other_tid = other_tid;
  if (comm_is_kernel)
    bpf_probe_read_kernel_str(e->other_comm, sizeof(e->other_comm), other_comm);
  else
    __builtin_memcpy(e->other_comm, other_comm, RS_COMM_LEN);
  RS_SUBMIT(sched_rb, e);
}

static __always_inline void handle_switch(struct switch_args* a) {
  __u32 zero = 0;
  __u64 now = bpf_ktime_get_ns();
  struct rs_sched_cpu_stats* st = bpf_map_lookup_elem(&cpu_stats, &zero);
  if (st) st->switches++;

  bool prev_traced = is_traced_tgid(a->prev_tgid);
  if (prev_traced) {
    bpf_map_update_elem(&traced_tids, &a->prev_tid, &a->prev_tgid, BPF_ANY);
    struct off_cpu_start s = {.ts_ns = now, .next_tid = a->next_tid};
    s.next_pid = a->next_tgid;
    bpf_probe_read_kernel_str(s.next_comm, sizeof(s.next_comm), a->next_comm);
    bpf_map_update_elem(&off_start, &a->prev_tid, &s, BPF_ANY);
  }
  /* A preempted task is runnable at once: its wait for the CPU starts now. */
  if (a->prev_runnable) mark_runnable(a->prev_tid);

  if (!a->next_tid) return; /* idle */
  __u32 next_tgid = a->next_tgid;
  if (!next_tgid) {
    __u32* cached = bpf_map_lookup_elem(&traced_tids, &a->next_tid);
    if (cached) next_tgid = *cached;
  }
  bool next_traced = is_traced_tgid(next_tgid);

  __u64* ts = bpf_map_lookup_elem(&runq_start, &a->next_tid);
  if (ts) {
    __u64 start = *ts;
    bpf_map_delete_elem(&runq_start, &a->next_tid);
    if (now > start) {
      __u64 wait = now - start;
      if (next_traced) {
        if (wait >= min_interval_ns)
          emit(RS_SCHED_RUNQ, start, now, next_tgid, a->next_tid, a->prev_tgid, a->prev_tid,
               a->prev_comm, true);
      } else {
        if (st) {
          st->runq_count++;
          st->runq_total_ns += wait;
        }
        __u64* mx = bpf_map_lookup_elem(&runq_max, &zero);
        if (mx && wait > *mx) *mx = wait;
      }
    }
  }
  if (next_traced) {
    struct off_cpu_start* s = bpf_map_lookup_elem(&off_start, &a->next_tid);
    if (s) {
      struct off_cpu_start copy = *s;
      bpf_map_delete_elem(&off_start, &a->next_tid);
      if (now > copy.ts_ns && now - copy.ts_ns >= min_interval_ns)
        emit(RS_SCHED_OFF_CPU, copy.ts_ns, now, next_tgid, a->next_tid, copy.next_pid,
             copy.next_tid, copy.next_comm, false);
    }
  }
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct* prev, struct task_struct* next) {
  struct switch_args a = {};
  a.prev_tid = BPF_CORE_READ(prev, pid);
  a.prev_tgid = BPF_CORE_READ(prev, tgid);
  a.next_tid = BPF_CORE_READ(next, pid);
  a.next_tgid = BPF_CORE_READ(next, tgid);
  a.prev_runnable = a.prev_tid && (preempt || task_state(prev) == RS_TASK_RUNNING);
  a.prev_comm = prev->comm;
  a.next_comm = next->comm;
  handle_switch(&a);
  return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup_btf, struct task_struct* p) {
  mark_runnable(BPF_CORE_READ(p, pid));
  return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new_btf, struct task_struct* p) {
  mark_runnable(BPF_CORE_READ(p, pid));
  return 0;
}

SEC("tracepoint/sched/sched_switch")
int sched_switch_tp(struct trace_event_raw_sched_switch* ctx) {
  struct switch_args a = {};
  /* The tracepoint fires before the switch: current is prev. */
  __u64 id = bpf_get_current_pid_tgid();
  a.prev_tid = ctx->prev_pid;
  a.prev_tgid = (__u32)id == a.prev_tid ? id >> 32 : 0;
  a.next_tid = ctx->next_pid;
  a.next_tgid = 0;
  long state = ctx->prev_state;
  a.prev_runnable = a.prev_tid && (state == RS_TASK_RUNNING || (state & RS_TASK_REPORT_MAX));
  a.prev_comm = ctx->prev_comm;
  a.next_comm = ctx->next_comm;
  handle_switch(&a);
  return 0;
}

SEC("tracepoint/sched/sched_wakeup")
int sched_wakeup_tp(struct trace_event_raw_sched_wakeup_template* ctx) {
  mark_runnable(ctx->pid);
  return 0;
}

SEC("tracepoint/sched/sched_wakeup_new")
int sched_wakeup_new_tp(struct trace_event_raw_sched_wakeup_template* ctx) {
  mark_runnable(ctx->pid);
  return 0;
}
