// Kernel <-> user ABI of the NCCL probe (bpf/nccl.bpf.c <-> recorder/nccl_probe.cc).
// One event per NCCL API call, emitted at return (or read from the entry map at the end of
// recording for calls still in flight). Layout versioned by CALL_ABI_VERSION (abi/call.h).
#pragma once

#include "call.h"

#define NCCL_UNIQUE_ID_BYTES 128
#define NCCL_MAX_OUT 8  // output-pointer words read at return (ncclCommInitAll: first 8 comms)

// Function ids, passed to the BPF programs in the low 16 bits of the attach cookie.
enum nccl_fn {
  NCCL_FN_ALL_REDUCE = 1,
  NCCL_FN_ALL_GATHER,
  NCCL_FN_REDUCE_SCATTER,
  NCCL_FN_BROADCAST,
  NCCL_FN_BCAST,
  NCCL_FN_REDUCE,
  NCCL_FN_SEND,
  NCCL_FN_RECV,
  NCCL_FN_GROUP_START,
  NCCL_FN_GROUP_END,
  NCCL_FN_COMM_INIT_RANK,
  NCCL_FN_COMM_INIT_RANK_CONFIG,
  NCCL_FN_COMM_INIT_ALL,
  NCCL_FN_COMM_SPLIT,
  NCCL_FN_COMM_DESTROY,
  NCCL_FN_COMM_ABORT,
  NCCL_FN_COMM_USER_RANK,  // not a row: tells the rank of a communicator (after CommSplit)
  NCCL_FN_COMM_COUNT,      // not a row: tells nranks of a communicator
  NCCL_FN_MAX,
};

// Flags in bits 16.. of the attach cookie: what the BPF side reads besides the registers.
#define NCCL_READ_UNIQUE_ID (1u << 16)  // copy the ncclUniqueId passed by value at [sp+8]
#define NCCL_OUT_ARG0 (1u << 17)        // at return: read *(u64*)arg0 (ncclComm_t* newcomm)
#define NCCL_OUT_ARG0_ARRAY (1u << 18)  // at return: read min(arg1, 8) words at arg0 (InitAll)
#define NCCL_OUT_ARG3 (1u << 19)        // at return: read *(u64*)arg3 (CommSplit newcomm)
#define NCCL_OUT_ARG1_INT (1u << 20)    // at return: read *(int*)arg1 (CommUserRank/Count)

struct nccl_event {
  __u16 abi;        // CALL_ABI_VERSION
  __u16 fn;         // enum nccl_fn
  __u32 cookie;     // the full attach cookie (fn | flags)
  __u32 pid;        // tgid
  __u32 tid;
  __u64 entry_ns;   // bpf_ktime_get_ns() at entry (CLOCK_MONOTONIC)
  __u64 exit_ns;    // at return; 0 while in flight
  __s64 ret;        // ncclResult_t (rax); valid when exit_ns != 0
  __u16 tail_calls; // probed functions tail-jumped to from this one (internal bookkeeping)
  __u16 flags;      // CALL_FLAG_* (internal bookkeeping)
  __u32 n_out;      // valid words in out[]
  struct call_regs regs;
  __u64 out[NCCL_MAX_OUT];
  // Valid with NCCL_READ_UNIQUE_ID. Last member: other events are sent without it (user space
  // reads them as zero).
  __u8 unique_id[NCCL_UNIQUE_ID_BYTES];
};
