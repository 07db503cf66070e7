/* Scheduler events for traced processes and per-CPU aggregates for everything else:
 * bpf/sched.bpf.c -> recorder/sched_probe.cc -> sched_events, sched_summary. */
#ifndef RANKSCOPE_BPF_ABI_SCHED_H_
#define RANKSCOPE_BPF_ABI_SCHED_H_

#include "common.h"

enum rs_sched_kind {
  RS_SCHED_OFF_CPU = 1, /* switched out -> back in; other_* = the task that ran next */
  RS_SCHED_RUNQ = 2,    /* woken (or preempted) -> switched in; other_* = the task on the CPU */
};

struct rs_sched_event {
  __u64 ts_ns; /* start of the interval, bpf_ktime_get_ns() */
  __u64 duration_ns;
  __u32 kind; /* enum rs_sched_kind */
  __u32 pid;  /* tgid of the traced task */
  __u32 tid;
  __u32 cpu;       /* CPU it was switched in on */
  __u32 other_pid; /* 0: not known */
  __u32 other_tid;
  char other_comm[RS_COMM_LEN];
};

/* Per-CPU cumulative counters (map `cpu_stats`); user space takes deltas. */
struct rs_sched_cpu_stats {
  __u64 switches;   /* every sched_switch on this CPU */
  __u64 runq_count; /* run-queue waits of untraced tasks */
  __u64 runq_total_ns;
};

#endif /* RANKSCOPE_BPF_ABI_SCHED_H_ */
