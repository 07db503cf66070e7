// The communicator of the CPU collective library: a full TCP mesh between its ranks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"

struct ncclComm {
  int rank = 0;
  int nranks = 1;
  // fds[peer]: connected socket to that rank (-1 for self, and for every peer in
  // no-peers mode).
  std::vector<int> fds;
  // RANKSCOPE_TESTLIB_NO_PEERS=1: any rank/nranks, no network, collectives copy locally.
  bool no_peers = false;
  uint64_t nonce = 0;  // from the unique id; checked on every mesh connection
  std::string last_error;
};

namespace ncclcpu {

// Records the error on the communicator and prints it once to stderr (like NCCL WARN).
ncclResult_t Fail(ncclComm* comm, ncclResult_t code, const std::string& message);

// Bodies of the small query calls. They live out of line so the exported entry points are
// never leaf functions (a leaf would lose its `push %rbp` prologue).
ncclResult_t GetVersion(int* version);
const char* ErrorString(ncclResult_t result);
const char* LastError(const ncclComm* comm);
ncclResult_t AsyncError(const ncclComm* comm, ncclResult_t* error);
ncclResult_t CommCount(const ncclComm* comm, int* count);
ncclResult_t CommCuDevice(const ncclComm* comm, int* device);
ncclResult_t CommUserRank(const ncclComm* comm, int* rank);

}  // namespace ncclcpu
