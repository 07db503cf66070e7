// What PyTorch's NCCL watchdog does for a GPU job: a thread polls ncclCommGetAsyncError; an
// error of the device work (a peer died, the network failed) ends the process with status 1,
// since the host would otherwise wait forever at its next sync. (The communicator is not
// aborted first: the main thread may be inside a call on it, and the process ends anyway.)
#pragma once

#include <atomic>
#include <thread>

#include "nccl.h"

namespace trainer {

class Watchdog {
 public:
  Watchdog(ncclComm_t comm, int rank);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void Run();
  ncclComm_t comm_;
  int rank_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace trainer
