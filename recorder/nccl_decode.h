// NCCL call events (bpf/abi/nccl.h) -> nccl_events rows. Pure bookkeeping, no BPF and no
// database, so it is tested on hand-built event bytes:
//  - per-function argument decoding (x86-64 System V registers and stack words);
//  - communicators keyed by (pid, comm pointer): rank, nranks and comm_id_hash from
//    ncclCommInitRank* (the 128-byte ncclUniqueId passed by value), from ncclCommSplit
//    (rs::SplitCommIdHash of the parent) or from ncclCommUserRank/Count; unknown (NULL, never
//    guessed) for communicators created before recording started;
//  - NCCL's own commHash (nccl_comm_hash.h) beside it: rs::NcclCommHash of the unique id, or
//    rs::NcclSplitCommHash of the parent's for a split child; NULL for ncclCommInitAll's
//    communicators (their unique id stays inside the library);
//  - seq: per communicator, the n-th collective (from 1) that a process entered successfully
//    (or that is still in flight); send/recv count per peer and direction, so that rank A's
//    n-th SEND to B matches B's n-th RECV from A;
//  - in_group: per thread, inside ncclGroupStart ... ncclGroupEnd.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "bpf/abi/nccl.h"

namespace rs::rec {

struct NcclRow {
  int pid = 0, tid = 0;
  uint64_t entry_mono_ns = 0;
  std::optional<int64_t> duration_ns;  // NULL while in flight
  std::string op;                      // 'ALL_REDUCE', ...
  std::optional<int64_t> rank, nranks;
  std::optional<uint64_t> comm_id_hash;
  std::optional<uint64_t> nccl_comm_hash;  // NCCL's commHash (gpu_ops.nccl_comm_hash)
  std::optional<uint64_t> comm;
  std::optional<int64_t> seq;
  std::optional<int64_t> count;
  std::optional<std::string> datatype, reduce_op;
  std::optional<int64_t> bytes, peer, root;
  std::optional<uint64_t> stream;
  std::optional<int64_t> ret;
  bool in_group = false;
  bool in_flight = false;
  uint64_t caller = 0;  // return address at entry (symbolized into stack_id)
  // COMM_SPLIT that succeeded: its color (-1: NCCL_SPLIT_NOCOLOR) and key, and which split of
  // the parent it is (1 for the first: NCCL's splitCount). The merge derives each child's rank
  // and size from every member's (rank, color, key) (merger/split_ranks.h).
  std::optional<int64_t> split_color, split_key, split_seq;
};

// What a decoded ncclCommInitRank* told about the calling process (for ProcessTable).
struct NcclInitInfo {
  int pid = 0;
  int64_t rank = 0, nranks = 0;
};

// nccl_events.op of an operation by NCCL's ncclFunc_t number (0 BROADCAST ... 4 ALL_REDUCE,
// 6 SEND, 7 RECV; the numbering of NCCL's profiler events); nullptr for any other number.
const char* NcclFuncOpName(int func);
std::optional<std::string> NcclDatatypeName(int32_t dt);  // 'float32', ...
std::optional<int64_t> NcclDatatypeSize(int32_t dt);
// `count` elements of `dt` in bytes; nullopt for an unknown type or a count (the caller's, or
// a profiler region's: any value) whose bytes are negative or do not fit 64 bits.
std::optional<int64_t> NcclBytes(int64_t count, int32_t dt);
std::string NcclRedOpName(int32_t op);  // 'sum', ..., 'custom' for >= 5

class NcclDecoder {
 public:
  // One event (complete, or in flight when e.exit_ns == 0). nullopt for calls that are not
  // rows (ncclCommUserRank/Count only teach the decoder) or events of another ABI version.
  std::optional<NcclRow> Decode(const nccl_event& e);
  // Set by Decode when a successful ncclCommInitRank* was decoded; cleared by TakeInit.
  std::optional<NcclInitInfo> TakeInit() { return std::exchange(init_, std::nullopt); }
  // An exec replaced the process image at exec_ns: the communicators and group state made by
  // calls entered before it are gone; those of calls entered after it (the new image's, when
  // its events were decoded before the exec was handed on) stay.
  void ForgetProcess(int pid, uint64_t exec_ns);
  // Communicators first seen in a call without their creation (recording started later).
  uint64_t unknown_comms() const { return unknown_comms_; }
  uint64_t abi_mismatches() const { return abi_mismatches_; }

 private:
  struct Comm {
    std::optional<int64_t> rank, nranks;
    std::optional<uint64_t> hash;
    std::optional<uint64_t> nccl_hash;
    int64_t coll_seq = 0;
    uint64_t splits = 0;  // successful ncclCommSplit calls on this communicator
    std::map<int64_t, int64_t> send_seq, recv_seq;  // by peer
    uint64_t since_ns = 0;                          // entry time of the call that made it known
  };
  struct GroupDepth {
    int depth = 0;
    uint64_t since_ns = 0;
  };
  using Key = std::pair<int, uint64_t>;  // (pid, comm pointer)

  Comm* Lookup(int pid, uint64_t comm);  // creates an unknown entry when absent (comm != 0)
  void FillComm(NcclRow& row, int pid, uint64_t comm);
  void DecodeInit(const nccl_event& e, NcclRow& row, bool ok);
  void DecodeInitAll(const nccl_event& e, NcclRow& row, bool ok);
  void DecodeSplit(const nccl_event& e, NcclRow& row, bool ok);

  std::map<Key, Comm> comms_;
  std::map<std::pair<int, int>, GroupDepth> group_depth_;  // by (pid, tid)
  uint64_t now_ns_ = 0;                                    // entry time of the event being decoded
  std::optional<NcclInitInfo> init_;
  uint64_t unknown_comms_ = 0;
  uint64_t abi_mismatches_ = 0;
};

}  // namespace rs::rec
