// The exported NCCL API of the CPU collective library. Every public ncclX is a weak alias of
// pncclX at the same address, as in the real libnccl.so.2. These entry points stay separate,
// non-inlined functions with a frame-pointer prologue (push %rbp), so uprobes on them are
// cheap; the work happens in collectives.cc and bootstrap.cc.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <unistd.h>

#include "bootstrap.h"
#include "collectives.h"
#include "comm.h"
#include "nccl.h"
#include "reduce.h"
#include "transport.h"

#define NCCL_API(ret, name, ...)                                                                   \
  extern "C" __attribute__((visibility("default"), noinline)) ret p##name(__VA_ARGS__);            \
  extern "C" __attribute__((visibility("default"), weak, alias("p" #name))) ret name(__VA_ARGS__); \
  extern "C" __attribute__((visibility("default"), noinline)) ret p##name(__VA_ARGS__)

namespace ncclcpu {

namespace {

thread_local int group_depth = 0;
thread_local std::vector<P2pOp> group_ops;

bool NoPeersMode() {
  const char* v = std::getenv("RANKSCOPE_TESTLIB_NO_PEERS");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

ncclResult_t InitRank(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank) {
  if (out == nullptr) return Fail(nullptr, ncclInvalidArgument, "CommInitRank: comm is NULL");
  *out = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    return Fail(nullptr, ncclInvalidArgument,
                "CommInitRank: rank " + std::to_string(rank) + " is not in [0, " +
                    std::to_string(nranks) + ")");
  }
  auto* comm = new ncclComm;
  comm->rank = rank;
  comm->nranks = nranks;
  if (NoPeersMode()) {
    comm->no_peers = true;
    comm->fds.assign(nranks, -1);
    *out = comm;
    return ncclSuccess;
  }
  std::string error;
  ncclResult_t r = JoinMesh(comm, id, &error);
  if (r != ncclSuccess) {
    Fail(comm, r, "CommInitRank: " + error);
    delete comm;
    return r;
  }
  *out = comm;
  return ncclSuccess;
}

void CloseComm(ncclComm* comm) {
  for (int fd : comm->fds) {
    if (fd >= 0) close(fd);
  }
  delete comm;
}

ncclResult_t CheckComm(ncclComm* comm, const char* what) {
  if (comm == nullptr) return Fail(nullptr, ncclInvalidArgument, std::string(what) + ": NULL comm");
  return ncclSuccess;
}

ncclResult_t CheckColl(ncclComm* comm, ncclDataType_t type, const char* what) {
  if (ncclResult_t r = CheckComm(comm, what); r != ncclSuccess) return r;
  if (TypeSize(type) == 0) {
    return Fail(comm, ncclInvalidArgument, std::string(what) + ": invalid datatype");
  }
  return ncclSuccess;
}

ncclResult_t CheckReduce(ncclComm* comm, ncclDataType_t type, ncclRedOp_t op, const char* what) {
  if (ncclResult_t r = CheckColl(comm, type, what); r != ncclSuccess) return r;
  if (!CanReduce(type, op)) {
    return Fail(comm, ncclInvalidArgument,
                std::string(what) + ": unsupported datatype/op " + std::to_string(type) + "/" +
                    std::to_string(op));
  }
  return ncclSuccess;
}

ncclResult_t CheckPeer(ncclComm* comm, int peer, const char* what) {
  if (peer < 0 || peer >= comm->nranks) {
    return Fail(comm, ncclInvalidArgument,
                std::string(what) + ": peer/root " + std::to_string(peer) + " out of range");
  }
  return ncclSuccess;
}

ncclResult_t P2p(bool send, void* buf, size_t count, ncclDataType_t type, int peer,
                 ncclComm* comm) {
  const char* what = send ? "Send" : "Recv";
  if (ncclResult_t r = CheckColl(comm, type, what); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPeer(comm, peer, what); r != ncclSuccess) return r;
  P2pOp op{comm, send, buf, count * TypeSize(type), peer};
  if (group_depth > 0) {
    group_ops.push_back(op);
    return ncclSuccess;
  }
  std::vector<P2pOp> ops{op};
  return RunP2p(ops);
}

ncclResult_t Split(ncclComm* comm, int color, int key, ncclComm_t* out) {
  if (out == nullptr) return Fail(comm, ncclInvalidArgument, "CommSplit: newcomm is NULL");
  *out = nullptr;
  if (ncclResult_t r = CheckComm(comm, "CommSplit"); r != ncclSuccess) return r;
  if (comm->no_peers || comm->nranks == 1) {
    if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
    auto* c = new ncclComm;
    c->no_peers = comm->no_peers;
    c->fds.assign(1, -1);
    *out = c;
    return ncclSuccess;
  }
  const int n = comm->nranks;
  // 1. Everyone learns every (color, key).
  std::vector<int> all(3 * n);
  int mine[3] = {color, key, comm->rank};
  if (ncclResult_t r = AllGather(comm, mine, all.data(), 3, ncclInt32); r != ncclSuccess) return r;
  std::vector<std::pair<int, int>> members;  // (key, parent rank) of my color
  for (int i = 0; i < n; ++i) {
    if (color != NCCL_SPLIT_NOCOLOR && all[3 * i] == color) {
      members.push_back({all[3 * i + 1], all[3 * i + 2]});
    }
  }
  std::sort(members.begin(), members.end());
  int new_rank = -1;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].second == comm->rank) new_rank = static_cast<int>(i);
  }
  // 2. The first member of each color creates the new id; everyone learns every id.
  ncclUniqueId id{};
  std::string error;
  if (new_rank == 0) {
    uint32_t addr = LocalEndpoint(comm->fds[comm->rank == 0 ? 1 : 0]).addr;
    if (CreateUniqueId(addr, 0, &id, &error) != ncclSuccess) {
      return Fail(comm, ncclSystemError, "CommSplit: " + error);
    }
  }
  std::vector<ncclUniqueId> ids(n);
  if (ncclResult_t r = AllGather(comm, &id, ids.data(), sizeof(id), ncclUint8); r != ncclSuccess) {
    return r;
  }
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  return InitRank(out, static_cast<int>(members.size()), ids[members[0].second], new_rank);
}

}  // namespace
}  // namespace ncclcpu

using namespace ncclcpu;  // NOLINT: the C API below is the library's boundary

NCCL_API(ncclResult_t, ncclGetVersion, int* version) { return GetVersion(version); }

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) return Fail(nullptr, ncclInvalidArgument, "GetUniqueId: NULL id");
  uint16_t port = 0;
  if (const char* env = std::getenv("NCCL_COMM_ID")) {
    Endpoint e;
    if (!ParseEndpoint(env, &e)) {
      return Fail(nullptr, ncclInvalidArgument,
                  std::string("NCCL_COMM_ID='") + env + "' is not IPV4:PORT");
    }
    port = ntohs(e.port);
  }
  std::string error;
  ncclResult_t r = CreateUniqueId(PickLocalAddress(), port, uniqueId, &error);
  if (r != ncclSuccess) Fail(nullptr, r, "GetUniqueId: " + error);
  return r;
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank) {
  return InitRank(comm, nranks, commId, rank);
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank, ncclConfig_t* config) {
  (void)config;
  return InitRank(comm, nranks, commId, rank);
}

// One communicator per "device" in this process, over loopback; collectives on them must be
// issued from one thread per communicator (they block until all ranks joined).
NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comm, int ndev, const int* devlist) {
  (void)devlist;
  if (comm == nullptr || ndev < 1) return Fail(nullptr, ncclInvalidArgument, "CommInitAll");
  ncclUniqueId id{};
  std::string error;
  if (!NoPeersMode() && CreateUniqueId(htonl(INADDR_LOOPBACK), 0, &id, &error) != ncclSuccess) {
    return Fail(nullptr, ncclSystemError, "CommInitAll: " + error);
  }
  std::vector<ncclResult_t> results(ndev, ncclSuccess);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i) {
    threads.emplace_back([&, i] { results[i] = InitRank(&comm[i], ndev, id, i); });
  }
  for (std::thread& t : threads) t.join();
  for (ncclResult_t r : results) {
    if (r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) { return CheckComm(comm, "Finalize"); }

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  if (comm != nullptr) CloseComm(comm);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (comm != nullptr) CloseComm(comm);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config) {
  (void)config;
  return Split(comm, color, key, newcomm);
}

NCCL_API(const char*, ncclGetErrorString, ncclResult_t result) { return ErrorString(result); }

NCCL_API(const char*, ncclGetLastError, ncclComm_t comm) { return LastError(comm); }

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  return AsyncError(comm, asyncError);
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  return CommCount(comm, count);
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  return CommCuDevice(comm, device);
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  return CommUserRank(comm, rank);
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  if (ncclResult_t r = CheckReduce(comm, datatype, op, "Reduce"); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPeer(comm, root, "Reduce"); r != ncclSuccess) return r;
  return count == 0 ? ncclSuccess
                    : ReduceToRoot(comm, sendbuff, recvbuff, count, datatype, op, root);
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  if (ncclResult_t r = CheckColl(comm, datatype, "Bcast"); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPeer(comm, root, "Bcast"); r != ncclSuccess) return r;
  return count == 0 ? ncclSuccess : Broadcast(comm, buff, buff, count, datatype, root);
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  if (ncclResult_t r = CheckColl(comm, datatype, "Broadcast"); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPeer(comm, root, "Broadcast"); r != ncclSuccess) return r;
  return count == 0 ? ncclSuccess : Broadcast(comm, sendbuff, recvbuff, count, datatype, root);
}

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  if (ncclResult_t r = CheckReduce(comm, datatype, op, "AllReduce"); r != ncclSuccess) return r;
  return count == 0 ? ncclSuccess : AllReduce(comm, sendbuff, recvbuff, count, datatype, op);
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  if (ncclResult_t r = CheckReduce(comm, datatype, op, "ReduceScatter"); r != ncclSuccess) {
    return r;
  }
  return recvcount == 0 ? ncclSuccess
                        : ReduceScatter(comm, sendbuff, recvbuff, recvcount, datatype, op);
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  if (ncclResult_t r = CheckColl(comm, datatype, "AllGather"); r != ncclSuccess) return r;
  return sendcount == 0 ? ncclSuccess : AllGather(comm, sendbuff, recvbuff, sendcount, datatype);
}

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  return P2p(true, const_cast<void*>(sendbuff), count, datatype, peer, comm);
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  return P2p(false, recvbuff, count, datatype, peer, comm);
}

NCCL_API(ncclResult_t, ncclGroupStart, void) {
  ++group_depth;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGroupEnd, void) {
  if (group_depth == 0) return Fail(nullptr, ncclInvalidUsage, "GroupEnd without GroupStart");
  if (--group_depth > 0) return ncclSuccess;
  std::vector<P2pOp> ops;
  ops.swap(group_ops);
  return ops.empty() ? ncclSuccess : RunP2p(ops);
}
