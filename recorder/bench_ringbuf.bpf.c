/* Benchmark-only event source for bench_ringbuf_sqlite: one rs_sched_event-sized record per
 * getppid() call of the benchmark process. Never loaded by rankscope-record. */
#include "common.bpf.h"  // first: the vmlinux.h types the ABI header uses

#include "sched.h"

const volatile __u32 bench_tgid = 0;

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 16 << 20);
} bench_rb SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_getppid")
int bench_getppid(void* ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  if ((__u32)(id >> 32) != bench_tgid) return 0;
  struct rs_sched_event* e = RS_RESERVE(bench_rb, struct rs_sched_event);
  if (!e) return 0;
  e->ts_ns = bpf_ktime_get_ns();
  e->duration_ns = 15000;
  e->kind = RS_SCHED_RUNQ;
  e->pid = id >> 32;
  e->tid = (__u32)id;
  e->cpu = bpf_get_smp_processor_id();
  e->other_pid = 1;
  e->other_tid = 1;
  __builtin_memcpy(e->other_comm, "competitor\0\0\0\0\0", RS_COMM_LEN);
  RS_SUBMIT(bench_rb, e);
  return 0;
}
