/* Block requests, issue -> complete: bpf/block.bpf.c -> recorder/block_probe.cc -> block_events. */
#ifndef RANKSCOPE_BPF_ABI_BLOCK_H_
#define RANKSCOPE_BPF_ABI_BLOCK_H_

#include "common.h"

#define RS_RWBS_LEN 10

struct rs_block_event {
  __u64 ts_ns;       /* issue, bpf_ktime_get_ns() */
  __u64 duration_ns; /* issue -> complete */
  __u64 sector;
  __u32 dev;              /* kernel dev_t: major << 20 | minor */
  __u32 bytes;            /* request size at issue */
  __u32 pid;              /* tgid that issued it */
  __s32 error;            /* completion status (0 = ok) */
  char rwbs[RS_RWBS_LEN]; /* the kernel's rwbs letters, e.g. "WS", "R", "FF" */
  char comm[RS_COMM_LEN];
};

#endif /* RANKSCOPE_BPF_ABI_BLOCK_H_ */
