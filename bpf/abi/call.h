// Kernel <-> user ABI shared by the uprobe-based call probes (nccl, cuda): the raw register
// and stack words of a library call at entry, as the BPF programs capture them. User space
// decodes them per function (recorder/nccl_probe.cc, recorder/cuda_probe.cc); the BPF side
// stays generic and small.
//
// Versioning: bump CALL_ABI_VERSION whenever a struct below (or in nccl.h / cuda.h) changes
// layout or meaning. User space drops (and counts) events whose abi field differs.
#pragma once

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define CALL_ABI_VERSION 2

// x86-64 System V: integer arguments 1..6 in rdi, rsi, rdx, rcx, r8, r9; the rest (and
// structs larger than 16 bytes, such as the 128-byte ncclUniqueId) in memory at [sp+8],
// [sp+16], ... at function entry; [sp] holds the return address (the direct caller).
struct call_regs {
  __u64 arg[6];    // rdi, rsi, rdx, rcx, r8, r9
  __u64 stack[3];  // [sp+8], [sp+16], [sp+24] (arguments 7.. or by-value structs)
  __u64 ret_addr;  // [sp]: return address into the caller
  __u64 sp;        // stack pointer at entry (identifies the frame; see nesting in the probes)
};

// lib_maps ring: a process is mapping the code of a file whose name starts with the probe's
// library prefix (ld.so loading a copy): user space scans that process at once.
struct call_lib_map {
  __u32 pid;  // tgid
  __u32 fd;   // the mapped file's descriptor in that process
};

// Bits of the events' `flags` (internal to the BPF side; user space ignores them).
#define CALL_FLAG_WAKE 1  // the slot's first event: ask whether its process is announced
                          // (wakeup_flags in call_probe.bpf.h)

// Per-CPU counters in the `stats` array map of each call probe.
enum call_stat {
  CALL_STAT_RB_FULL = 0,     // ring-buffer reserve/output failures (events lost)
  CALL_STAT_LOST_ENTRY = 1,  // a return whose entry state was missing (LRU eviction)
  CALL_STAT_STALE_ENTRY = 2, // an entry state overwritten by a later call (longjmp out)
  CALL_STAT_NESTED = 3,      // calls made from inside another probed call (not recorded)
  CALL_STAT_SAMPLED_OUT = 4, // launches skipped by 1-in-N sampling (cuda only)
  CALL_STAT_MAX = 5,
};
