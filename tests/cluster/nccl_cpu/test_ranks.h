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

// Forks n ranks that join the communicator of the id `make_id` returns and run body (then
// destroy the communicator, unless destroy is false); returns each rank's exit status (-1:
// killed after the timeout). The ranks are forked before make_id runs and read the id from a
// pipe: making an id starts the bootstrap root's thread in this process, and a fork while
// that thread holds an allocator lock (ASan's allocator has no fork handlers) would leave the
// child's copy of the lock held forever.
inline std::vector<int> RunRanksWith(const std::function<ncclUniqueId()>& make_id, int n,
                                     const RankBody& body, int timeout_s, bool destroy) {
  std::vector<pid_t> pids;
  std::vector<int> writers;
  for (int r = 0; r < n; ++r) {
    int fds[2];
    if (pipe(fds) != 0) {
      ADD_FAILURE() << "pipe failed";
      break;
    }
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[1]);
      for (int w : writers) close(w);
      ncclUniqueId id;
      size_t got = 0;
      while (got < sizeof(id)) {
        ssize_t k = read(fds[0], reinterpret_cast<char*>(&id) + got, sizeof(id) - got);
        if (k <= 0) _exit(201);
        got += static_cast<size_t>(k);
      }
      close(fds[0]);
      ncclComm_t comm = nullptr;
      if (ncclCommInitRank(&comm, n, id, r) != ncclSuccess) _exit(200);
      int code = body(r, comm);
      if (destroy) ncclCommDestroy(comm);
      _exit(code);
    }
    close(fds[0]);
    writers.push_back(fds[1]);
    pids.push_back(pid);
  }
  const ncclUniqueId id = make_id();
  for (int w : writers) {
    if (write(w, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) ADD_FAILURE() << "write";
    close(w);
  }
  std::vector<int> status(n, -1);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int left = static_cast<int>(pids.size());
  while (left > 0 && std::chrono::steady_clock::now() < deadline) {
    for (size_t r = 0; r < pids.size(); ++r) {
      int st = 0;
      if (status[r] == -1 && pids[r] > 0 && waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        pids[r] = 0;
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (size_t r = 0; r < pids.size(); ++r) {
    if (pids[r] > 0) {
      kill(pids[r], SIGKILL);
      waitpid(pids[r], nullptr, 0);
    }
  }
  return status;
}

// With a given id (made earlier by the caller).
inline std::vector<int> RunRanks(const ncclUniqueId& id, int n, const RankBody& body,
                                 int timeout_s = 60, bool destroy = true) {
  return RunRanksWith([&id] { return id; }, n, body, timeout_s, destroy);
}

// The same with a fresh unique id, made after the ranks are forked.
inline std::vector<int> RunRanks(int n, const RankBody& body, int timeout_s = 60,
                                 bool destroy = true) {
  return RunRanksWith(
      [] {
        ncclUniqueId id;
        EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
        return id;
      },
      n, body, timeout_s, destroy);
}

inline void ExpectAllZero(const std::vector<int>& status) {
  for (size_t r = 0; r < status.size(); ++r) EXPECT_EQ(status[r], 0) << "rank " << r;
}
