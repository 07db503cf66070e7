/* Process exec / exit: bpf/process.bpf.c -> recorder/process_probe.cc -> process_events. */
#ifndef RANKSCOPE_BPF_ABI_PROCESS_H_
#define RANKSCOPE_BPF_ABI_PROCESS_H_

#include "common.h"

#define RS_FILENAME_LEN 256

enum rs_process_kind {
  RS_PROCESS_EXEC = 1,
  RS_PROCESS_EXIT = 2,
};

struct rs_process_event {
  __u64 ts_ns;
  __u32 kind; /* enum rs_process_kind */
  __u32 pid;  /* tgid */
  __u32 ppid;
  __s32 exit_code; /* raw wait status (task->exit_code) for exits */
  char comm[RS_COMM_LEN];
  char filename[RS_FILENAME_LEN]; /* exec only */
};

#endif /* RANKSCOPE_BPF_ABI_PROCESS_H_ */
