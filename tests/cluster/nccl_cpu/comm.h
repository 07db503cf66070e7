// The communicator of the CPU collective library: a full TCP mesh between its ranks, the
// state NCCL keeps per communicator (its commHash, sequence numbers per collective kind, the
// error raised asynchronously by its device work, the profiler plugin's context), and its
// lifetime: the user's handle and every piece of enqueued device work hold a reference.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
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
  uint64_t nonce = 0;      // from the unique id; checked on every mesh connection
  int cuda_dev = 0;        // the device whose legacy stream a NULL stream means
  int n_nodes = 1;         // distinct host addresses among the ranks
  uint64_t comm_hash = 0;  // NCCL's commHash (rscore/nccl_comm_hash.h)
  int split_count = 0;     // splits of this communicator so far (NCCL's splitCount)
  std::string name;        // ncclConfig_t.commName, if given
  // ncclConfig_t.blocking = 0: calls return ncclInProgress and a group's launch runs on a
  // thread of its own (NCCL's group.cc: groupLaunchNonBlocking); ncclCommGetAsyncError says
  // ncclInProgress until it is done, and a call meanwhile is refused (ncclCommEnsureReady).
  bool nonblocking = false;
  uint64_t seq_number[5] = {};  // per NCCL function (Broadcast, Reduce, AllGather, RS, AR)
  // Graph replays launched whose host node has not run yet: meanwhile every plan's events go
  // through the device in launch order too (enqueue.cc), as NCCL's go through its host stream.
  std::atomic<int> replays_pending{0};

  // The profiler plugin's context for this communicator (null: no plugin, or its init failed).
  void* profiler_context = nullptr;
  bool profiler_ref = false;  // holds a reference on the loaded plugin library

  // Device work runs in the order it was launched: ticket n may start once exec_next == n.
  std::mutex mu;
  std::condition_variable cv;
  uint64_t next_ticket = 0;  // host side, under mu
  uint64_t exec_next = 0;    // device side, under mu
  int launching = 0;         // non-blocking launches not yet enqueued, under mu
  std::string last_error;    // under mu
  std::atomic<int> async_error{ncclSuccess};
  std::atomic<bool> aborted{false};
  std::atomic<int> refs{1};
};

namespace ncclcpu {

// Records the error on the communicator and prints it once to stderr (like NCCL WARN).
ncclResult_t Fail(ncclComm* comm, ncclResult_t code, const std::string& message);
// Raises an error of the communicator's device work (already reported by Fail): what
// ncclCommGetAsyncError reports and every later call on the communicator returns (the first
// error wins).
void SetAsyncError(ncclComm* comm, ncclResult_t code);
// NCCL's ncclCommEnsureReady, before a call uses the communicator: refused with
// ncclInvalidArgument while a non-blocking operation is in progress; its asynchronous error
// returned once it has one.
ncclResult_t EnsureReady(ncclComm* comm);
// The communicator's asynchronous error as its launches and device work read it: a
// non-blocking launch in progress (ncclInProgress) is no error of theirs.
ncclResult_t WorkError(const ncclComm* comm);

// A reference for enqueued work; Release drops one, and the last one closes the sockets,
// finalizes the profiler context and frees the communicator.
void Retain(ncclComm* comm);
void Release(ncclComm* comm);
// What device work does when it is done: counts itself finished (for WaitIdle and the launch
// order) and drops its reference in one step, so that a WaitIdle that returns has seen the
// reference go and the caller's own Release is the last one.
void FinishWork(ncclComm* comm);
// Marks the communicator aborted and wakes device work blocked on its sockets or stuck after
// an error (it then finishes without doing anything).
void Abort(ncclComm* comm);
// Waits until every piece of device work launched so far has finished.
void WaitIdle(ncclComm* comm);

// Bodies of the small query calls. They live out of line so the exported entry points are
// never leaf functions (a leaf would lose its `push %rbp` prologue).
ncclResult_t GetVersion(int* version);
const char* ErrorString(ncclResult_t result);
const char* LastError(ncclComm* comm);
ncclResult_t AsyncError(const ncclComm* comm, ncclResult_t* error);
ncclResult_t CommCount(const ncclComm* comm, int* count);
ncclResult_t CommCuDevice(const ncclComm* comm, int* device);
ncclResult_t CommUserRank(const ncclComm* comm, int* rank);

}  // namespace ncclcpu
