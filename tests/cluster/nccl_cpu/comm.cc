#include "comm.h"

#include <cstdio>

namespace ncclcpu {

ncclResult_t Fail(ncclComm* comm, ncclResult_t code, const std::string& message) {
  std::string text = message;
  if (comm != nullptr) {
    text =
        "rank " + std::to_string(comm->rank) + "/" + std::to_string(comm->nranks) + ": " + message;
    comm->last_error = text;
  }
  std::fprintf(stderr, "nccl-cpu: %s\n", text.c_str());
  return code;
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

const char* LastError(const ncclComm* comm) {
  return comm != nullptr ? comm->last_error.c_str() : "";
}

ncclResult_t AsyncError(const ncclComm* comm, ncclResult_t* error) {
  if (comm == nullptr || error == nullptr) return ncclInvalidArgument;
  *error = ncclSuccess;
  return ncclSuccess;
}

ncclResult_t CommCount(const ncclComm* comm, int* count) {
  if (comm == nullptr || count == nullptr) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t CommCuDevice(const ncclComm* comm, int* device) {
  if (comm == nullptr || device == nullptr) return ncclInvalidArgument;
  *device = 0;
  return ncclSuccess;
}

ncclResult_t CommUserRank(const ncclComm* comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

}  // namespace ncclcpu
