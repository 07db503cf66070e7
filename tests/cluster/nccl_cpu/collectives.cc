#include "collectives.h"

#include <cstring>
#include <vector>

#include "link_fault.h"
#include "proxy_trace.h"
#include "reduce.h"
#include "transport.h"

namespace ncclcpu {
namespace {

int Mod(int a, int n) { return ((a % n) + n) % n; }

// Element range [begin, end) of chunk i when `count` elements are split in n chunks.
size_t ChunkBegin(size_t count, int n, int i) {
  return count * static_cast<size_t>(i) / static_cast<size_t>(n);
}

// One step of an algorithm: its transfers run together. The calling thread's proxy trace (the
// profiler's ProxyStep events), if any, sees each transfer posted and done; a degraded link
// (link_fault.h) holds the step's sends to another node after they were posted.
ncclResult_t Exchange(ncclComm* comm, std::vector<Transfer>& t, const char* what) {
  std::string error;
  ProxyTrace* trace = ProxyTrace::Current();
  bool ok = true;
  if (trace != nullptr) {
    trace->Posted(t);
    DelayOnDegradedLink(t);
    ok = RunTransfers(t, &error, [trace](size_t i) { trace->Done(i); });
  } else {
    DelayOnDegradedLink(t);
    ok = RunTransfers(t, &error);
  }
  if (!ok) {
    return Fail(comm, ncclRemoteError, std::string(what) + ": " + error);
  }
  return ncclSuccess;
}

// Ring reduce-scatter in place on buf (count elements): afterwards chunk `rank` of buf holds
// the reduction over all ranks. tmp must hold the largest chunk.
ncclResult_t RingReduceScatter(ncclComm* comm, char* buf, size_t count, ncclDataType_t type,
                               ncclRedOp_t op, const char* what) {
  const int n = comm->nranks;
  const int r = comm->rank;
  const size_t size = TypeSize(type);
  const int next = comm->fds[Mod(r + 1, n)];
  const int prev = comm->fds[Mod(r - 1, n)];
  std::vector<char> tmp((count / n + 1) * size);
  for (int step = 0; step < n - 1; ++step) {
    int send_chunk = Mod(r - step - 1, n);
    int recv_chunk = Mod(r - step - 2, n);
    size_t sb = ChunkBegin(count, n, send_chunk), se = ChunkBegin(count, n, send_chunk + 1);
    size_t rb = ChunkBegin(count, n, recv_chunk), re = ChunkBegin(count, n, recv_chunk + 1);
    std::vector<Transfer> t{{next, true, buf + sb * size, (se - sb) * size, 0},
                            {prev, false, tmp.data(), (re - rb) * size, 0}};
    if (ncclResult_t res = Exchange(comm, t, what); res != ncclSuccess) return res;
    Reduce(buf + rb * size, tmp.data(), re - rb, type, op);
  }
  if (op == ncclAvg) {
    size_t b = ChunkBegin(count, n, r), e = ChunkBegin(count, n, r + 1);
    FinishAvg(buf + b * size, e - b, type, n);
  }
  return ncclSuccess;
}

// Ring all-gather in place on buf whose chunk `rank` is already filled; chunk i is
// [ChunkBegin(count, n, i), ChunkBegin(count, n, i + 1)).
ncclResult_t RingAllGather(ncclComm* comm, char* buf, size_t count, size_t size, const char* what) {
  const int n = comm->nranks;
  const int r = comm->rank;
  const int next = comm->fds[Mod(r + 1, n)];
  const int prev = comm->fds[Mod(r - 1, n)];
  for (int step = 0; step < n - 1; ++step) {
    int send_chunk = Mod(r - step, n);
    int recv_chunk = Mod(r - step - 1, n);
    size_t sb = ChunkBegin(count, n, send_chunk), se = ChunkBegin(count, n, send_chunk + 1);
    size_t rb = ChunkBegin(count, n, recv_chunk), re = ChunkBegin(count, n, recv_chunk + 1);
    std::vector<Transfer> t{{next, true, buf + sb * size, (se - sb) * size, 0},
                            {prev, false, buf + rb * size, (re - rb) * size, 0}};
    if (ncclResult_t res = Exchange(comm, t, what); res != ncclSuccess) return res;
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t Barrier(ncclComm* comm, const char* what) {
  if (comm->no_peers || comm->nranks < 2) return ncclSuccess;
  std::vector<char> token(static_cast<size_t>(comm->nranks), 1);
  return RingAllGather(comm, token.data(), token.size(), 1, what);
}

ncclResult_t AllReduce(ncclComm* comm, const void* send, void* recv, size_t count,
                       ncclDataType_t type, ncclRedOp_t op) {
  const size_t bytes = count * TypeSize(type);
  if (send != recv) std::memmove(recv, send, bytes);
  if (comm->no_peers || comm->nranks == 1) return ncclSuccess;
  char* buf = static_cast<char*>(recv);
  if (ncclResult_t r = RingReduceScatter(comm, buf, count, type, op, "AllReduce");
      r != ncclSuccess) {
    return r;
  }
  return RingAllGather(comm, buf, count, TypeSize(type), "AllReduce");
}

ncclResult_t AllGather(ncclComm* comm, const void* send, void* recv, size_t count,
                       ncclDataType_t type) {
  const size_t bytes = count * TypeSize(type);
  char* out = static_cast<char*>(recv);
  char* mine = out + static_cast<size_t>(comm->rank) * bytes;
  if (send != mine) std::memmove(mine, send, bytes);
  if (comm->no_peers || comm->nranks == 1) return ncclSuccess;
  // Chunks of exactly `count` elements: total = count * nranks splits evenly.
  return RingAllGather(comm, out, count * comm->nranks, TypeSize(type), "AllGather");
}

ncclResult_t ReduceScatter(ncclComm* comm, const void* send, void* recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op) {
  const size_t size = TypeSize(type);
  const size_t bytes = count * size;
  const char* in = static_cast<const char*>(send);
  if (comm->no_peers || comm->nranks == 1) {
    std::memmove(recv, in + static_cast<size_t>(comm->rank) * bytes, bytes);
    return ncclSuccess;
  }
  std::vector<char> work(in, in + bytes * comm->nranks);
  ncclResult_t r =
      RingReduceScatter(comm, work.data(), count * comm->nranks, type, op, "ReduceScatter");
  if (r != ncclSuccess) return r;
  std::memcpy(recv, work.data() + static_cast<size_t>(comm->rank) * bytes, bytes);
  return ncclSuccess;
}

ncclResult_t Broadcast(ncclComm* comm, const void* send, void* recv, size_t count,
                       ncclDataType_t type, int root) {
  const size_t bytes = count * TypeSize(type);
  const int n = comm->nranks;
  if (comm->rank == root && send != recv) std::memmove(recv, send, bytes);
  if (comm->no_peers || n == 1) {
    if (comm->rank != root && send != recv) std::memmove(recv, send, bytes);
    return ncclSuccess;
  }
  // Chain along the ring starting at root: receive from prev, forward to next.
  const int d = Mod(comm->rank - root, n);
  char* buf = static_cast<char*>(recv);
  if (d > 0) {
    std::vector<Transfer> t{{comm->fds[Mod(comm->rank - 1, n)], false, buf, bytes, 0}};
    if (ncclResult_t r = Exchange(comm, t, "Broadcast"); r != ncclSuccess) return r;
  }
  if (d < n - 1) {
    std::vector<Transfer> t{{comm->fds[Mod(comm->rank + 1, n)], true, buf, bytes, 0}};
    if (ncclResult_t r = Exchange(comm, t, "Broadcast"); r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

ncclResult_t ReduceToRoot(ncclComm* comm, const void* send, void* recv, size_t count,
                          ncclDataType_t type, ncclRedOp_t op, int root) {
  const size_t size = TypeSize(type);
  const size_t bytes = count * size;
  const int n = comm->nranks;
  if (comm->no_peers || n == 1) {
    if (comm->rank == root && send != recv) std::memmove(recv, send, bytes);
    return ncclSuccess;
  }
  // Ring reduce-scatter, then every rank sends its reduced chunk to root.
  const char* in = static_cast<const char*>(send);
  std::vector<char> work(in, in + bytes);
  ncclResult_t r = RingReduceScatter(comm, work.data(), count, type, op, "Reduce");
  if (r != ncclSuccess) return r;
  std::vector<Transfer> t;
  for (int i = 0; i < n; ++i) {
    size_t b = ChunkBegin(count, n, i), e = ChunkBegin(count, n, i + 1);
    if (comm->rank == root && i != root) {
      t.push_back({comm->fds[i], false, work.data() + b * size, (e - b) * size, 0});
    } else if (comm->rank != root && i == comm->rank) {
      t.push_back({comm->fds[root], true, work.data() + b * size, (e - b) * size, 0});
    }
  }
  if (r = Exchange(comm, t, "Reduce"); r != ncclSuccess) return r;
  if (comm->rank == root) std::memcpy(recv, work.data(), bytes);
  return ncclSuccess;
}

ncclResult_t RunP2p(std::vector<P2pOp>& ops) {
  std::vector<Transfer> t;
  std::vector<P2pOp*> self_sends;
  std::vector<P2pOp*> self_recvs;
  ncclComm* first = ops.empty() ? nullptr : ops.front().comm;
  for (P2pOp& op : ops) {
    if (op.comm->no_peers || op.comm->nranks == 1) continue;
    if (op.peer == op.comm->rank) {
      (op.send ? self_sends : self_recvs).push_back(&op);
      continue;
    }
    t.push_back({op.comm->fds[op.peer], op.send, static_cast<char*>(op.buf), op.bytes, 0});
  }
  for (size_t i = 0; i < self_recvs.size() && i < self_sends.size(); ++i) {
    std::memcpy(self_recvs[i]->buf, self_sends[i]->buf,
                std::min(self_recvs[i]->bytes, self_sends[i]->bytes));
  }
  if (self_sends.size() != self_recvs.size()) {
    return Fail(first, ncclInvalidUsage, "a send to self has no matching receive from self");
  }
  return t.empty() ? ncclSuccess : Exchange(first, t, "Send/Recv");
}

}  // namespace ncclcpu
