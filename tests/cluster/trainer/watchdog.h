// What PyTorch's NCCL watchdog does for a GPU job: a thread polls ncclCommGetAsyncError on
// every communicator of the rank; an error of the device work (a peer died, the network
// failed) ends the process with status 1, since the host would otherwise wait forever at its
// next sync. Before that it calls `on_error` (the Flight Recorder's dump: PyTorch's watchdog
// dumps on a timeout or an exception, TORCH_NCCL_DUMP_ON_TIMEOUT). (The communicators are not
// aborted first: the main thread may be inside a call on one, and the process ends anyway.)
#pragma once

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "nccl.h"

namespace trainer {

class Watchdog {
 public:
  Watchdog(std::vector<ncclComm_t> comms, int rank, std::function<void()> on_error = {});
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void Run();
  std::vector<ncclComm_t> comms_;
  int rank_;
  std::function<void()> on_error_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace trainer
