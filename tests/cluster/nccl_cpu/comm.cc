#include "comm.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

#include "profiler.h"

namespace ncclcpu {

ncclResult_t Fail(ncclComm* comm, ncclResult_t code, const std::string& message) {
  std::string text = message;
  if (comm != nullptr) {
    text =
        "rank " + std::to_string(comm->rank) + "/" + std::to_string(comm->nranks) + ": " + message;
    std::lock_guard<std::mutex> lock(comm->mu);
    comm->last_error = text;
  }
  std::fprintf(stderr, "nccl-cpu: %s\n", text.c_str());
  return code;
}

void SetAsyncError(ncclComm* comm, ncclResult_t code) {
  int expected = ncclSuccess;
  if (comm->async_error.compare_exchange_strong(expected, code)) return;
  // A non-blocking launch in progress: the error is what its end reports.
  if (expected == ncclInProgress) comm->async_error.compare_exchange_strong(expected, code);
}

ncclResult_t EnsureReady(ncclComm* comm) {
  const int e = comm->async_error.load();
  if (e == ncclInProgress) {
    return Fail(comm, ncclInvalidArgument,
                "Attempt to use communicator before the previous operation returned ncclSuccess");
  }
  if (e != ncclSuccess) {
    return Fail(comm, static_cast<ncclResult_t>(e),
                "the communicator has an asynchronous error: abort it (ncclCommAbort)");
  }
  return ncclSuccess;
}

ncclResult_t WorkError(const ncclComm* comm) {
  const int e = comm->async_error.load();
  return e == ncclInProgress ? ncclSuccess : static_cast<ncclResult_t>(e);
}

void Retain(ncclComm* comm) { comm->refs.fetch_add(1); }

namespace {

void Free(ncclComm* comm) {
  for (int fd : comm->fds) {
    if (fd >= 0) close(fd);
  }
  ProfilerFinalize(comm);
  delete comm;
}

}  // namespace

void Release(ncclComm* comm) {
  if (comm->refs.fetch_sub(1) == 1) Free(comm);
}

void FinishWork(ncclComm* comm) {
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(comm->mu);
    ++comm->exec_next;
    last = comm->refs.fetch_sub(1) == 1;
    comm->cv.notify_all();
  }
  if (last) Free(comm);  // only after an abort: the user's reference is gone
}

void Abort(ncclComm* comm) {
  comm->aborted.store(true);
  for (int fd : comm->fds) {
    if (fd >= 0) shutdown(fd, SHUT_RDWR);  // transfers blocked in poll() fail at once
  }
  std::lock_guard<std::mutex> lock(comm->mu);
  comm->cv.notify_all();
}

void WaitIdle(ncclComm* comm) {
  std::unique_lock<std::mutex> lock(comm->mu);
  comm->cv.wait(lock, [&] { return comm->launching == 0 && comm->exec_next >= comm->next_ticket; });
}

ncclResult_t GetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char* ErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* LastError(ncclComm* comm) {
  if (comm == nullptr) return "";
  thread_local std::string copy;  // the caller's pointer stays valid while device work writes
  std::lock_guard<std::mutex> lock(comm->mu);
  copy = comm->last_error;
  return copy.c_str();
}

ncclResult_t AsyncError(const ncclComm* comm, ncclResult_t* error) {
  if (comm == nullptr || error == nullptr) return ncclInvalidArgument;
  *error = static_cast<ncclResult_t>(comm->async_error.load());
  return ncclSuccess;
}

ncclResult_t CommCount(const ncclComm* comm, int* count) {
  if (comm == nullptr || count == nullptr) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t CommCuDevice(const ncclComm* comm, int* device) {
  if (comm == nullptr || device == nullptr) return ncclInvalidArgument;
  *device = comm->cuda_dev;
  return ncclSuccess;
}

ncclResult_t CommUserRank(const ncclComm* comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

}  // namespace ncclcpu
