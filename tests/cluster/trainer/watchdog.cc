#include "watchdog.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace trainer {

Watchdog::Watchdog(std::vector<ncclComm_t> comms, int rank, std::function<void()> on_error)
    : comms_(std::move(comms)), rank_(rank), on_error_(std::move(on_error)) {
  thread_ = std::thread([this] { Run(); });
}

Watchdog::~Watchdog() {
  stop_ = true;
  thread_.join();
}

void Watchdog::Run() {
  while (!stop_.load()) {
    for (ncclComm_t comm : comms_) {
      ncclResult_t error = ncclSuccess;
      // A non-blocking communicator reads ncclInProgress while a launch is pending: no error
      // (ProcessGroupNCCL's watchdog skips it, "no exception should be thrown").
      if (ncclCommGetAsyncError(comm, &error) == ncclSuccess && error != ncclSuccess &&
          error != ncclInProgress) {
        std::fprintf(stderr,
                     "rankscope-trainer: rank %d: NCCL asynchronous error: %s (a peer rank died "
                     "or the network failed); exiting\n",
                     rank_, ncclGetErrorString(error));
        if (on_error_) on_error_();
        std::_Exit(1);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace trainer
