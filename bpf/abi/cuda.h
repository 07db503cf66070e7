// Kernel <-> user ABI of the CUDA probe (bpf/cuda.bpf.c <-> recorder/cuda_probe.cc).
// One event per CUDA runtime (libcudart) or driver (libcuda) API call, emitted at return
// or read from the entry map at the end of recording. Versioned by CALL_ABI_VERSION.
#pragma once

#include "call.h"

// Function ids (low 16 bits of the attach cookie); names in recorder/cuda_probe.cc.
enum cuda_fn {
  CUDA_FN_MALLOC = 1,
  CUDA_FN_FREE,
  CUDA_FN_MALLOC_MANAGED,
  CUDA_FN_MEMCPY,
  CUDA_FN_MEMCPY_ASYNC,
  CUDA_FN_LAUNCH_KERNEL,
  CUDA_FN_LAUNCH_KERNEL_PTSZ,
  CUDA_FN_LAUNCH_KERNEL_EXC,
  CUDA_FN_STREAM_SYNCHRONIZE,
  CUDA_FN_STREAM_SYNCHRONIZE_PTSZ,
  CUDA_FN_DEVICE_SYNCHRONIZE,
  CUDA_FN_EVENT_SYNCHRONIZE,
  CUDA_FN_STREAM_WAIT_EVENT,
  CU_FN_LAUNCH_KERNEL,
  CU_FN_MEM_ALLOC,
  CU_FN_MEMCPY,
  CU_FN_MEMCPY_ASYNC,
  CU_FN_MEMCPY_HTOD,
  CU_FN_MEMCPY_DTOH,
  CU_FN_MEMCPY_DTOD,
  CU_FN_MEMCPY_HTOD_ASYNC,
  CU_FN_MEMCPY_DTOH_ASYNC,
  CU_FN_MEMCPY_DTOD_ASYNC,
  CU_FN_CTX_SYNCHRONIZE,
  CU_FN_STREAM_SYNCHRONIZE,
  CUDA_FN_MAX,
};

// Flags in bits 16.. of the attach cookie.
#define CUDA_LAUNCH (1u << 16)         // a kernel launch: subject to 1-in-N sampling
#define CUDA_DRIVER (1u << 17)         // libcuda (own entry slot: runtime calls nest into it)
#define CUDA_OUT_ARG0 (1u << 18)       // at return: read *(u64*)arg0 (cudaMalloc's devPtr)
#define CUDA_CONFIG_STREAM (1u << 19)  // at entry: read the stream at arg0+32
                                       // (cudaLaunchConfig_t.stream, cudaLaunchKernelExC)

struct cuda_event {
  __u16 abi;     // CALL_ABI_VERSION
  __u16 fn;      // enum cuda_fn
  __u32 cookie;
  __u32 pid;
  __u32 tid;
  __u64 entry_ns;
  __u64 exit_ns;  // 0 while in flight
  __s64 ret;
  __u16 tail_calls;     // as in nccl_event
  __u16 flags;          // CALL_FLAG_* (internal bookkeeping)
  __u32 sample_weight;  // N for launches sampled 1-in-N, else 1
  __u64 out;            // word read at return (CUDA_OUT_ARG0) or at entry (CUDA_CONFIG_STREAM)
  struct call_regs regs;
};
