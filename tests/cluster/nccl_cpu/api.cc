// The exported NCCL API of the CPU collective library. Every public ncclX is a weak alias of
// pncclX at the same address, as in the real libnccl.so.2. These entry points stay separate,
// non-inlined functions with a frame-pointer prologue (push %rbp), so uprobes on them are
// cheap; calls become tasks in enqueue.cc, the work happens in collectives.cc (on a stream's
// worker in async mode) and bootstrap.cc.
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
#include "enqueue.h"
#include "nccl.h"
#include "profiler.h"
#include "reduce.h"
#include "rscore/nccl_comm_hash.h"
#include "transport.h"

#define NCCL_API(ret, name, ...)                                                                   \
  extern "C" __attribute__((visibility("default"), noinline)) ret p##name(__VA_ARGS__);            \
  extern "C" __attribute__((visibility("default"), weak, alias("p" #name))) ret name(__VA_ARGS__); \
  extern "C" __attribute__((visibility("default"), noinline)) ret p##name(__VA_ARGS__)

namespace ncclcpu {

namespace {

bool NoPeersMode() {
  const char* v = std::getenv("RANKSCOPE_TESTLIB_NO_PEERS");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// The name a profiler plugin's init receives: ncclConfig_t.commName when the config is one.
std::string ConfigName(const ncclConfig_t* config) {
  if (config == nullptr || config->magic != NCCL_CONFIG_MAGIC || config->commName == nullptr) {
    return "";
  }
  return config->commName;
}

// Joins a communicator; comm_hash is NCCL's commHash of it (from the id, or of a split).
ncclResult_t InitRank(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, int device,
                      uint64_t comm_hash, const std::string& name) {
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
  comm->cuda_dev = device;
  comm->comm_hash = comm_hash;
  comm->name = name;
  if (NoPeersMode()) {
    comm->no_peers = true;
    comm->fds.assign(nranks, -1);
  } else {
    std::string error;
    ncclResult_t r = JoinMesh(comm, id, &error);
    if (r != ncclSuccess) {
      Fail(comm, r, "CommInitRank: " + error);
      delete comm;
      return r;
    }
  }
  ProfilerInit(comm);
  *out = comm;
  return ncclSuccess;
}

// ncclConfig_t.blocking = 0 (NCCL's default, NCCL_CONFIG_UNDEF_INT, is blocking).
bool ConfigNonBlocking(const ncclConfig_t* config) {
  return config != nullptr && config->magic == NCCL_CONFIG_MAGIC && config->blocking == 0;
}

// A non-blocking communicator's init returns ncclInProgress (NCCL runs it on a thread and the
// caller polls ncclCommGetAsyncError). Here it is done before the call returns, so the first
// poll reads ncclSuccess; the calls and what the profiler sees are NCCL's.
ncclResult_t Initialized(ncclComm_t comm, ncclResult_t r, bool nonblocking) {
  if (r != ncclSuccess || comm == nullptr) return r;
  comm->nonblocking = nonblocking;
  return nonblocking ? ncclInProgress : ncclSuccess;
}

ncclResult_t InitRoot(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank,
                      const ncclConfig_t* config) {
  ncclResult_t r = InitRank(out, nranks, id, rank, cudacpuHostDevice(),
                            rs::NcclCommHash(id.internal, sizeof(id.internal)), ConfigName(config));
  return Initialized(out != nullptr ? *out : nullptr, r, ConfigNonBlocking(config));
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

// A checked call as a task of the calling thread's group (buf: a Send's or Recv's buffer).
ncclResult_t Enqueue(Func func, ncclComm* comm, const void* send, void* recv, size_t count,
                     ncclDataType_t type, ncclRedOp_t op, int root, cudaStream_t stream) {
  Task t;
  t.func = func;
  t.comm = comm;
  t.send = send;
  t.recv = recv;
  t.count = count;
  t.datatype = type;
  t.op = op;
  t.root = root;
  t.stream = stream;
  return EnqueueTask(t);
}

ncclResult_t P2p(Func func, void* buf, size_t count, ncclDataType_t type, int peer, ncclComm* comm,
                 cudaStream_t stream) {
  const char* what = func == kSend ? "Send" : "Recv";
  if (ncclResult_t r = CheckColl(comm, type, what); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPeer(comm, peer, what); r != ncclSuccess) return r;
  return Enqueue(func, comm, nullptr, buf, count, type, ncclSum, peer, stream);
}

ncclResult_t Coll(Func func, ncclComm* comm, const void* send, void* recv, size_t count,
                  ncclDataType_t type, ncclRedOp_t op, int root, cudaStream_t stream) {
  if (count == 0) return ncclSuccess;
  return Enqueue(func, comm, send, recv, count, type, op, root, stream);
}

ncclResult_t Split(ncclComm* comm, int color, int key, ncclComm_t* out,
                   const ncclConfig_t* config) {
  if (out == nullptr) return Fail(comm, ncclInvalidArgument, "CommSplit: newcomm is NULL");
  *out = nullptr;
  if (ncclResult_t r = CheckComm(comm, "CommSplit"); r != ncclSuccess) return r;
  if (ncclResult_t r = EnsureReady(comm); r != ncclSuccess) return r;
  // Without a config the child keeps the parent's (NCCL copies the parent's config).
  const bool nonblocking = config != nullptr ? ConfigNonBlocking(config) : comm->nonblocking;
  // The split exchanges on the communicator's sockets from this thread: its device work
  // must be done first (NCCL splits over a separate bootstrap network instead).
  WaitIdle(comm);
  const uint64_t hash = rs::NcclSplitCommHash(comm->comm_hash, ++comm->split_count, color);
  // Without a config the child keeps the parent's (NCCL copies the parent's config).
  const std::string name = config != nullptr ? ConfigName(config) : comm->name;
  if (comm->no_peers || comm->nranks == 1) {
    if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
    auto* c = new ncclComm;
    c->no_peers = comm->no_peers;
    c->fds.assign(1, -1);
    c->cuda_dev = comm->cuda_dev;
    c->comm_hash = hash;
    c->name = name;
    ProfilerInit(c);
    *out = c;
    return Initialized(c, ncclSuccess, nonblocking);
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
  ncclResult_t r = InitRank(out, static_cast<int>(members.size()), ids[members[0].second], new_rank,
                            comm->cuda_dev, hash, name);
  return Initialized(*out, r, nonblocking);
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
  return InitRoot(comm, nranks, commId, rank, nullptr);
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank, ncclConfig_t* config) {
  return InitRoot(comm, nranks, commId, rank, config);
}

// One communicator per device in this process (devlist, else devices 0..ndev-1), over
// loopback. In sync mode, collectives on them must be issued from one thread per communicator
// (they block until all ranks joined); in async mode each runs on its device's streams.
NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comm, int ndev, const int* devlist) {
  if (comm == nullptr || ndev < 1) return Fail(nullptr, ncclInvalidArgument, "CommInitAll");
  ncclUniqueId id{};
  std::string error;
  if (!NoPeersMode() && CreateUniqueId(htonl(INADDR_LOOPBACK), 0, &id, &error) != ncclSuccess) {
    return Fail(nullptr, ncclSystemError, "CommInitAll: " + error);
  }
  std::vector<ncclResult_t> results(ndev, ncclSuccess);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i) {
    int device = devlist != nullptr ? devlist[i] : i;
    threads.emplace_back([&, i, device] {
      results[i] = InitRank(&comm[i], ndev, id, i, device,
                            rs::NcclCommHash(id.internal, sizeof(id.internal)), "");
    });
  }
  for (std::thread& t : threads) t.join();
  for (ncclResult_t r : results) {
    if (r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

// Finalize and Destroy wait for the communicator's device work, as NCCL's do; Abort does not
// (the work still queued finishes without doing anything).
NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  if (ncclResult_t r = CheckComm(comm, "Finalize"); r != ncclSuccess) return r;
  WaitIdle(comm);
  return static_cast<ncclResult_t>(comm->async_error.load());
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  WaitIdle(comm);
  Release(comm);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  Abort(comm);
  Release(comm);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config) {
  return Split(comm, color, key, newcomm, config);
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
  if (ncclResult_t r = CheckReduce(comm, datatype, op, "Reduce"); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPeer(comm, root, "Reduce"); r != ncclSuccess) return r;
  return Coll(kReduce, comm, sendbuff, recvbuff, count, datatype, op, root, stream);
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = CheckColl(comm, datatype, "Bcast"); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPeer(comm, root, "Bcast"); r != ncclSuccess) return r;
  return Coll(kBroadcast, comm, buff, buff, count, datatype, ncclSum, root, stream);
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = CheckColl(comm, datatype, "Broadcast"); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPeer(comm, root, "Broadcast"); r != ncclSuccess) return r;
  return Coll(kBroadcast, comm, sendbuff, recvbuff, count, datatype, ncclSum, root, stream);
}

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = CheckReduce(comm, datatype, op, "AllReduce"); r != ncclSuccess) return r;
  return Coll(kAllReduce, comm, sendbuff, recvbuff, count, datatype, op, 0, stream);
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = CheckReduce(comm, datatype, op, "ReduceScatter"); r != ncclSuccess) {
    return r;
  }
  return Coll(kReduceScatter, comm, sendbuff, recvbuff, recvcount, datatype, op, 0, stream);
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = CheckColl(comm, datatype, "AllGather"); r != ncclSuccess) return r;
  return Coll(kAllGather, comm, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, stream);
}

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream) {
  return P2p(kSend, const_cast<void*>(sendbuff), count, datatype, peer, comm, stream);
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  return P2p(kRecv, recvbuff, count, datatype, peer, comm, stream);
}

NCCL_API(ncclResult_t, ncclGroupStart, void) { return GroupStart(); }

NCCL_API(ncclResult_t, ncclGroupEnd, void) { return GroupEnd(); }
