#include "watchdog.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace trainer {

Watchdog::Watchdog(ncclComm_t comm, int rank) : comm_(comm), rank_(rank) {
  thread_ = std::thread([this] { Run(); });
}

Watchdog::~Watchdog() {
  stop_ = true;
  thread_.join();
}

void Watchdog::Run() {
  while (!stop_.load()) {
    ncclResult_t error = ncclSuccess;
    if (ncclCommGetAsyncError(comm_, &error) == ncclSuccess && error != ncclSuccess) {
      std::fprintf(stderr,
                   "rankscope-trainer: rank %d: NCCL asynchronous error: %s (a peer rank died or "
                   "the network failed); exiting\n",
                   rank_, ncclGetErrorString(error));
      std::_Exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace trainer
