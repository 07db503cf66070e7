/* Process exec / exit (thread-group exits only). */
#include "common.bpf.h"  // first: the vmlinux.h types the ABI header uses

#include "process.h"

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 20);
} process_rb SEC(".maps");

static __always_inline struct rs_process_event* start_event(struct task_struct* task, __u32 kind) {
  if (scope_netns && rs_task_netns(task) != scope_netns) return NULL;
  struct rs_process_event* e = RS_RESERVE(process_rb, struct rs_process_event);
  if (!e) return NULL;
  e->ts_ns = bpf_ktime_get_ns();
  e->kind = kind;
  e->pid = BPF_CORE_READ(task, tgid);
  e->ppid = BPF_CORE_READ(task, real_parent, tgid);
  e->exit_code = 0;
  BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
  e->filename[0] = '\0';
  return e;
}

static __always_inline void on_exit(struct task_struct* task) {
  /* One row per process: only when the thread-group leader exits. */
  if (BPF_CORE_READ(task, pid) != BPF_CORE_READ(task, tgid)) return;
  struct rs_process_event* e = start_event(task, RS_PROCESS_EXIT);
  if (!e) return;
  e->exit_code = BPF_CORE_READ(task, exit_code);
  RS_SUBMIT(process_rb, e);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(process_exec_btf, struct task_struct* p, pid_t old_pid, struct linux_binprm* bprm) {
  struct rs_process_event* e = start_event(p, RS_PROCESS_EXEC);
  if (!e) return 0;
  bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), BPF_CORE_READ(bprm, filename));
  RS_SUBMIT(process_rb, e);
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(process_exit_btf, struct task_struct* p) {
  on_exit(p);
  return 0;
}

SEC("tracepoint/sched/sched_process_exec")
int process_exec_tp(struct trace_event_raw_sched_process_exec* ctx) {
  struct task_struct* task = (struct task_struct*)bpf_get_current_task();
  struct rs_process_event* e = start_event(task, RS_PROCESS_EXEC);
  if (!e) return 0;
  __u32 off = ctx->__data_loc_filename & 0xffff;
  bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), (void*)ctx + off);
  RS_SUBMIT(process_rb, e);
  return 0;
}

SEC("tracepoint/sched/sched_process_exit")
int process_exit_tp(void* ctx) {
  on_exit((struct task_struct*)bpf_get_current_task());
  return 0;
}
