// How an NCCL call becomes work, as in NCCL: every collective and send/recv is a task of the
// calling thread's group (an implicit group of one around a single call, or the tasks between
// ncclGroupStart and ncclGroupEnd); the outermost group end launches one plan per
// communicator. In async mode (RANKSCOPE_TESTLIB_COLLECTIVES=async, the default, as NCCL) the
// plan is enqueued on the first task's CUDA stream and runs when that stream reaches it; the
// call returns at once, and an error of the device work is reported by ncclCommGetAsyncError
// and by the communicator's later calls, while the failed plan stays stuck (as a kernel
// would) until ncclCommAbort. In sync mode (RANKSCOPE_TESTLIB_COLLECTIVES=sync: a CPU
// framework such as gloo) the plan runs on the calling thread, streams are ignored, and the
// call returns the result. The profiler plugin sees the same events in both modes.
#pragma once

#include <cstddef>

#include "comm.h"
#include "nccl.h"
#include "profiler.h"

namespace ncclcpu {

struct Task {
  Func func = kAllReduce;
  ncclComm* comm = nullptr;
  const void* send = nullptr;
  void* recv = nullptr;  // the buffer of Send/Recv
  size_t count = 0;
  ncclDataType_t datatype = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int root = 0;  // the peer of Send/Recv
  cudaStream_t stream = nullptr;
  // What the profiler needs later: the activation mask and the API events at the call.
  int mask = 0;
  void* group_api = nullptr;
  void* api = nullptr;
  void* event = nullptr;  // the Coll/P2p event
};

bool AsyncMode();
// RANKSCOPE_TESTLIB_KERNELS=symmetric: collectives run as NCCL 2.31's symmetric-memory kernels
// do, between an opening and a closing barrier with their peers, and say so to the profiler
// (coll.isSymColl; the kernel phases time the barriers). Else one ring pass, as NCCL's other
// kernels, whose phases hold no wait for a peer.
bool SymmetricKernels();
// Appends a checked task to the calling thread's group (ends the implicit group of a single
// call, which launches it unless a user group is open).
ncclResult_t EnqueueTask(const Task& task);
ncclResult_t GroupStart();
ncclResult_t GroupEnd();

}  // namespace ncclcpu
