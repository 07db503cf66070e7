// Shared by the test bed library's tests: ranks in forked processes joining one communicator
// over loopback TCP, each running a body whose non-zero result (the failing line) is its exit
// status.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

#include "child_check.h"
#include "nccl.h"

using RankBody = std::function<int(int rank, ncclComm_t comm)>;

// Forks n ranks that join the communicator of `id` and run body (then destroy the
// communicator, unless destroy is false); returns each rank's exit status (-1: killed after
// the timeout).
inline std::vector<int> RunRanks(const ncclUniqueId& id, int n, const RankBody& body,
                                 int timeout_s = 60, bool destroy = true) {
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      ncclComm_t comm = nullptr;
      if (ncclCommInitRank(&comm, n, id, r) != ncclSuccess) _exit(200);
      int code = body(r, comm);
      if (destroy) ncclCommDestroy(comm);
      _exit(code);
    }
    pids.push_back(pid);
  }
  std::vector<int> status(n, -1);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int left = n;
  while (left > 0 && std::chrono::steady_clock::now() < deadline) {
    for (int r = 0; r < n; ++r) {
      int st = 0;
      if (status[r] == -1 && pids[r] > 0 && waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        pids[r] = 0;
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int r = 0; r < n; ++r) {
    if (pids[r] > 0) {
      kill(pids[r], SIGKILL);
      waitpid(pids[r], nullptr, 0);
    }
  }
  return status;
}

// The same with a fresh unique id.
inline std::vector<int> RunRanks(int n, const RankBody& body, int timeout_s = 60,
                                 bool destroy = true) {
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  return RunRanks(id, n, body, timeout_s, destroy);
}

inline void ExpectAllZero(const std::vector<int>& status) {
  for (size_t r = 0; r < status.size(); ++r) EXPECT_EQ(status[r], 0) << "rank " << r;
}
