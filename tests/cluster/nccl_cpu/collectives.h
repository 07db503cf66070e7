// Collective algorithms of the CPU collective library on host buffers, blocking the calling
// thread (a stream's worker in async mode, the caller in sync mode) until complete: rings for
// AllReduce / AllGather / ReduceScatter / Reduce, a chain for Broadcast, and grouped
// point-to-point transfers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "comm.h"
#include "nccl.h"

namespace ncclcpu {

ncclResult_t AllReduce(ncclComm* comm, const void* send, void* recv, size_t count,
                       ncclDataType_t type, ncclRedOp_t op);
ncclResult_t AllGather(ncclComm* comm, const void* send, void* recv, size_t count,
                       ncclDataType_t type);
ncclResult_t ReduceScatter(ncclComm* comm, const void* send, void* recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op);
ncclResult_t Broadcast(ncclComm* comm, const void* send, void* recv, size_t count,
                       ncclDataType_t type, int root);
ncclResult_t ReduceToRoot(ncclComm* comm, const void* send, void* recv, size_t count,
                          ncclDataType_t type, ncclRedOp_t op, int root);

// Returns once every rank of the communicator entered it (a one-byte ring all-gather: nobody
// finishes before everybody sent): a symmetric kernel's opening and closing barrier.
ncclResult_t Barrier(ncclComm* comm, const char* what);

// One deferred point-to-point operation (between GroupStart and GroupEnd).
struct P2pOp {
  ncclComm* comm = nullptr;
  bool send = false;
  void* buf = nullptr;
  size_t bytes = 0;
  int peer = 0;
};
// Runs all operations concurrently; sends to self are matched with receives from self.
ncclResult_t RunP2p(std::vector<P2pOp>& ops);

}  // namespace ncclcpu
