// Non-blocking communicators (ncclConfig_t.blocking = 0) as PyTorch drives them: a call that
// returns ncclInProgress is polled with ncclCommGetAsyncError until it reads something else,
// yielding the CPU between polls (c10d's NCCLUtils.hpp: C10D_NCCL_CHECK_TIMEOUT_GROUPEND and
// C10D_NCCL_CHECK_TIMEOUT use sched_yield() for collectives and group ends,
// C10D_NCCL_CHECK_TIMEOUT_SLEEP a 2 ms sleep for init and finalize), at most a timeout
// (TORCH_NCCL_NONBLOCKING_TIMEOUT, 30 min by default; shorter here).
#pragma once

#include <sched.h>

#include <chrono>
#include <thread>

#include "nccl.h"

namespace trainer {

enum class Poll { kYield, kSleep };

// r as the call's final result: ncclInProgress polled away on `comm`; ncclInProgress still
// after timeout_s (a launch that never finished).
inline ncclResult_t Settle(ncclComm_t comm, ncclResult_t r, Poll poll = Poll::kYield,
                           int timeout_s = 120) {
  if (r != ncclInProgress || comm == nullptr) return r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress && std::chrono::steady_clock::now() < deadline) {
    if (poll == Poll::kYield) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclInvalidArgument;
  }
  return state;
}

}  // namespace trainer
