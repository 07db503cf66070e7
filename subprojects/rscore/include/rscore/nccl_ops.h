// The operations of collective communication libraries as every tool names them: one enum, the
// names stored in the tables (nccl_events.op, gpu_ops.op, fr_entries.op: 'ALL_REDUCE', 'SEND'),
// the names people read ('all-reduce'), and what each operation is:
//
//   collective   every member of the communicator / process group takes part, and each
//                member's call counts one collective sequence number of the group (PyTorch's
//                collective_seq_id; NCCL's per-communicator order)
//   p2p          one sender and one receiver (PyTorch's p2p_seq_id counts them per group)
//   rendezvous   no member's part can complete before every member has entered it (all-reduce,
//                all-gather, reduce-scatter, all-to-all, barrier); broadcast and reduce let the
//                root finish early, point-to-point calls pair two ranks only
//   has_root     one member is its root (broadcast, reduce, gather, scatter)
//   same_count   every member passes the same number of elements (what a size mismatch is
//                checked on): not all-to-all (uneven splits are legal), gather and scatter (the
//                root's buffers differ from the others')
//
// PyTorch's Flight Recorder names operations by a profiling name ('nccl:all_reduce',
// 'gloo:allreduce', 'nccl:_allgather_base', 'nccl:send 0->1', 'nccl:coalesced');
// OpFromProfilingName reads every spelling ProcessGroupNCCL and ProcessGroupGloo write.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rs {

enum class NcclOp : uint8_t {
  kUnknown,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,
  kReduce,
  kGather,
  kScatter,
  kBarrier,
  kSend,
  kRecv,
  // A group of operations issued together (ncclGroupStart/End, PyTorch's coalescing manager):
  // one entry for all of them; whether they are collectives or sends/receives, the entry's own
  // is_p2p says.
  kCoalesced,
};

struct NcclOpTraits {
  std::string_view name;    // as the tables store it: 'ALL_REDUCE'
  std::string_view spoken;  // as people read it: 'all-reduce'
  bool collective = false;
  bool p2p = false;
  bool rendezvous = false;
  bool has_root = false;
  bool same_count = false;
};

const NcclOpTraits& Traits(NcclOp op);

inline std::string_view OpName(NcclOp op) { return Traits(op).name; }
inline std::string_view OpSpoken(NcclOp op) { return Traits(op).spoken; }

// "'ALL_REDUCE', 'ALL_GATHER', ...": the stored names of the rendezvous operations, for SQL's IN.
std::string RendezvousOpsSql();

// 'ALL_REDUCE' -> kAllReduce; kUnknown for a name no tool writes.
NcclOp OpFromName(std::string_view name);

// A Flight Recorder profiling name -> its operation: the backend prefix ('nccl:', 'gloo:',
// 'c10d:') and the peers of a send/recv (' 0->1') dropped, leading underscores of private
// variants ('_allgather_base', '_reduce_oop') ignored, case ignored.
NcclOp OpFromProfilingName(std::string_view profiling_name);

}  // namespace rs
