#include "recorder/nccl_decode.h"

#include <iterator>

#include "rscore/comm_hash.h"
#include "rscore/nccl_comm_hash.h"

namespace rs::rec {
namespace {

constexpr int64_t kNcclInProgress = 7;  // non-blocking communicators: the call continues

int32_t I32(uint64_t reg) { return static_cast<int32_t>(reg); }  // an `int` argument
int64_t S64(uint64_t v) { return static_cast<int64_t>(v); }

// nccl_events.op of the operations, by NCCL's ncclFunc_t number (the profiler's numbering).
enum NcclFunc { kBroadcast = 0, kReduce, kAllGather, kReduceScatter, kAllReduce, kSend = 6, kRecv };
constexpr const char* kFuncOps[] = {"BROADCAST",  "REDUCE", "ALL_GATHER", "REDUCE_SCATTER",
                                    "ALL_REDUCE", nullptr,  "SEND",       "RECV"};

const char* OpName(uint16_t fn) {
  switch (fn) {
    case NCCL_FN_ALL_REDUCE:
      return kFuncOps[kAllReduce];
    case NCCL_FN_ALL_GATHER:
      return kFuncOps[kAllGather];
    case NCCL_FN_REDUCE_SCATTER:
      return kFuncOps[kReduceScatter];
    case NCCL_FN_BROADCAST:
    case NCCL_FN_BCAST:
      return kFuncOps[kBroadcast];
    case NCCL_FN_REDUCE:
      return kFuncOps[kReduce];
    case NCCL_FN_SEND:
      return kFuncOps[kSend];
    case NCCL_FN_RECV:
      return kFuncOps[kRecv];
    case NCCL_FN_GROUP_START:
      return "GROUP_START";
    case NCCL_FN_GROUP_END:
      return "GROUP_END";
    case NCCL_FN_COMM_INIT_RANK:
    case NCCL_FN_COMM_INIT_RANK_CONFIG:
      return "COMM_INIT";
    case NCCL_FN_COMM_INIT_ALL:
      return "COMM_INIT_ALL";
    case NCCL_FN_COMM_SPLIT:
      return "COMM_SPLIT";
    case NCCL_FN_COMM_DESTROY:
      return "COMM_DESTROY";
    case NCCL_FN_COMM_ABORT:
      return "COMM_ABORT";
    default:
      return nullptr;
  }
}

// Collective arguments: where count, datatype, op, root, comm and stream are for each function.
// Index 0..5 = registers rdi..r9, 6.. = stack words [sp+8], [sp+16], ...; -1 = not an argument.
struct ArgLayout {
  int count, datatype, op, root, peer, comm, stream;
};
std::optional<ArgLayout> Layout(uint16_t fn) {
  switch (fn) {
    // (sendbuff, recvbuff, count, datatype, op, comm, stream)
    case NCCL_FN_ALL_REDUCE:
    case NCCL_FN_REDUCE_SCATTER:
      return ArgLayout{2, 3, 4, -1, -1, 5, 6};
    // (sendbuff, recvbuff, sendcount, datatype, comm, stream)
    case NCCL_FN_ALL_GATHER:
      return ArgLayout{2, 3, -1, -1, -1, 4, 5};
    // (sendbuff, recvbuff, count, datatype, root, comm, stream)
    case NCCL_FN_BROADCAST:
      return ArgLayout{2, 3, -1, 4, -1, 5, 6};
    // (buff, count, datatype, root, comm, stream)
    case NCCL_FN_BCAST:
      return ArgLayout{1, 2, -1, 3, -1, 4, 5};
    // (sendbuff, recvbuff, count, datatype, op, root, comm, stream)
    case NCCL_FN_REDUCE:
      return ArgLayout{2, 3, 4, 5, -1, 6, 7};
    // (buff, count, datatype, peer, comm, stream)
    case NCCL_FN_SEND:
    case NCCL_FN_RECV:
      return ArgLayout{1, 2, -1, -1, 3, 4, 5};
    default:
      return std::nullopt;
  }
}

uint64_t Arg(const call_regs& r, int i) { return i < 6 ? r.arg[i] : r.stack[i - 6]; }

// A communicator made by ncclCommInitAll lives entirely in one process: its id only has to
// be unique, so it is derived from the process, the first communicator and the call time.
uint64_t InitAllHash(int pid, uint64_t first_comm, uint64_t entry_ns) {
  uint64_t s = rs::SplitMix64(rs::kCommHashSeed ^ 0x696e6974616c6cULL);  // "initall"
  s = rs::SplitMix64(s ^ static_cast<uint32_t>(pid));
  s = rs::SplitMix64(s ^ first_comm);
  return rs::SplitMix64(s ^ entry_ns);
}

}  // namespace

const char* NcclFuncOpName(int func) {
  if (func < 0 || func >= static_cast<int>(std::size(kFuncOps))) return nullptr;
  return kFuncOps[func];
}

std::optional<std::string> NcclDatatypeName(int32_t dt) {
  static const char* kNames[] = {"int8",    "uint8",    "int32",      "uint32",
                                 "int64",   "uint64",   "float16",    "float32",
                                 "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  if (dt < 0 || dt >= 12) return std::nullopt;
  return kNames[dt];
}

std::optional<int64_t> NcclDatatypeSize(int32_t dt) {
  static const int64_t kSizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  if (dt < 0 || dt >= 12) return std::nullopt;
  return kSizes[dt];
}

std::optional<int64_t> NcclBytes(int64_t count, int32_t dt) {
  const std::optional<int64_t> size = NcclDatatypeSize(dt);
  int64_t bytes = 0;
  if (!size || count < 0 || __builtin_mul_overflow(count, *size, &bytes)) return std::nullopt;
  return bytes;
}

std::string NcclRedOpName(int32_t op) {
  static const char* kNames[] = {"sum", "prod", "max", "min", "avg"};
  if (op >= 0 && op < 5) return kNames[op];
  return "custom";  // ncclRedOpCreatePreMulSum and other user-defined ops
}

NcclDecoder::Comm* NcclDecoder::Lookup(int pid, uint64_t comm) {
  if (comm == 0) return nullptr;
  auto [it, inserted] = comms_.try_emplace({pid, comm});
  if (inserted) {
    ++unknown_comms_;
    it->second.since_ns = now_ns_;
  }
  return &it->second;
}

void NcclDecoder::FillComm(NcclRow& row, int pid, uint64_t comm) {
  row.comm = comm;
  if (Comm* c = Lookup(pid, comm)) {
    row.rank = c->rank;
    row.nranks = c->nranks;
    row.comm_id_hash = c->hash;
    row.nccl_comm_hash = c->nccl_hash;
  }
}

void NcclDecoder::DecodeInit(const nccl_event& e, NcclRow& row, bool ok) {
  // (ncclComm_t* newcomm, int nranks, ncclUniqueId commId [by value, on the stack], int rank,
  //  [ncclConfig_t* config]): the struct goes to memory, so rank is the third register.
  row.nranks = I32(e.regs.arg[1]);
  row.rank = I32(e.regs.arg[2]);
  if (e.cookie & NCCL_READ_UNIQUE_ID) {
    row.comm_id_hash = rs::CommIdHash(e.unique_id);
    row.nccl_comm_hash = rs::NcclCommHash(e.unique_id, sizeof(e.unique_id));
  }
  if (!ok || e.n_out < 1 || e.out[0] == 0) return;
  row.comm = e.out[0];
  Comm& c = comms_[{static_cast<int>(e.pid), e.out[0]}];
  c = Comm{};
  c.since_ns = now_ns_;
  c.rank = row.rank;
  c.nranks = row.nranks;
  c.hash = row.comm_id_hash;
  c.nccl_hash = row.nccl_comm_hash;
  init_ = NcclInitInfo{static_cast<int>(e.pid), *row.rank, *row.nranks};
}

void NcclDecoder::DecodeInitAll(const nccl_event& e, NcclRow& row, bool ok) {
  // (ncclComm_t* comms, int ndev, const int* devlist): rank i of ndev is comms[i].
  int32_t ndev = I32(e.regs.arg[1]);
  row.nranks = ndev;
  if (!ok || e.n_out < 1 || e.out[0] == 0) return;
  row.comm = e.out[0];
  uint64_t hash = InitAllHash(static_cast<int>(e.pid), e.out[0], e.entry_ns);
  row.comm_id_hash = hash;
  for (uint32_t i = 0; i < e.n_out && i < NCCL_MAX_OUT; ++i) {
    if (e.out[i] == 0) continue;
    Comm& c = comms_[{static_cast<int>(e.pid), e.out[i]}];
    c = Comm{};
    c.since_ns = now_ns_;
    c.rank = i;
    c.nranks = ndev;
    c.hash = hash;
  }
}

void NcclDecoder::DecodeSplit(const nccl_event& e, NcclRow& row, bool ok) {
  // (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config).
  // The row describes the parent communicator the split is collective over.
  int pid = static_cast<int>(e.pid);
  FillComm(row, pid, e.regs.arg[0]);
  Comm* parent = Lookup(pid, e.regs.arg[0]);
  if (!ok || !parent) return;
  const int32_t color = I32(e.regs.arg[1]);
  row.split_color = color;
  row.split_key = I32(e.regs.arg[2]);
  row.split_seq = static_cast<int64_t>(parent->splits + 1);
  std::optional<uint64_t> child_hash, child_nccl_hash;
  if (parent->hash) child_hash = rs::SplitCommIdHash(*parent->hash, color, parent->splits);
  // NCCL counts the parent's splits from 1 (its splitCount after the increment).
  if (parent->nccl_hash) {
    child_nccl_hash =
        rs::NcclSplitCommHash(*parent->nccl_hash, static_cast<int32_t>(parent->splits + 1), color);
  }
  ++parent->splits;                          // every member splits, NCCL_SPLIT_NOCOLOR ones too
  if (e.n_out < 1 || e.out[0] == 0) return;  // NCCL_SPLIT_NOCOLOR: no new communicator
  Comm& child = comms_[{pid, e.out[0]}];
  child = Comm{};
  child.since_ns = now_ns_;
  child.hash = child_hash;  // rank / nranks: from ncclCommUserRank/Count if the program asks
  child.nccl_hash = child_nccl_hash;
}

std::optional<NcclRow> NcclDecoder::Decode(const nccl_event& e) {
  if (e.abi != CALL_ABI_VERSION) {
    ++abi_mismatches_;
    return std::nullopt;
  }
  const int pid = static_cast<int>(e.pid);
  now_ns_ = e.entry_ns;
  const bool in_flight = e.exit_ns == 0;
  // A call counts for the communicator when it succeeded or is still running.
  const bool ok = in_flight || e.ret == 0 || e.ret == kNcclInProgress;

  if (e.fn == NCCL_FN_COMM_USER_RANK || e.fn == NCCL_FN_COMM_COUNT) {
    if (!in_flight && ok && e.n_out >= 1) {
      if (Comm* c = Lookup(pid, e.regs.arg[0])) {
        int64_t v = I32(e.out[0]);
        if (e.fn == NCCL_FN_COMM_USER_RANK) {
          c->rank = c->rank.value_or(v);
        } else {
          c->nranks = c->nranks.value_or(v);
        }
      }
    }
    return std::nullopt;
  }
  const char* op = OpName(e.fn);
  if (!op) {
    ++abi_mismatches_;
    return std::nullopt;
  }

  NcclRow row;
  row.pid = pid;
  row.tid = static_cast<int>(e.tid);
  row.entry_mono_ns = e.entry_ns;
  row.op = op;
  row.in_flight = in_flight;
  row.caller = e.regs.ret_addr;
  if (!in_flight) {
    row.duration_ns = S64(e.exit_ns - e.entry_ns);
    row.ret = e.ret;
  }
  auto [group, fresh] = group_depth_.try_emplace({pid, row.tid});
  if (fresh) group->second.since_ns = now_ns_;
  int& depth = group->second.depth;

  switch (e.fn) {
    case NCCL_FN_GROUP_START:
      row.in_group = depth > 0;
      if (ok) ++depth;
      return row;
    case NCCL_FN_GROUP_END:
      row.in_group = depth > 1;
      if (depth > 0 && !in_flight) --depth;
      return row;
    case NCCL_FN_COMM_INIT_RANK:
    case NCCL_FN_COMM_INIT_RANK_CONFIG:
      row.in_group = depth > 0;
      DecodeInit(e, row, ok && !in_flight);
      return row;
    case NCCL_FN_COMM_INIT_ALL:
      row.in_group = depth > 0;
      DecodeInitAll(e, row, ok && !in_flight);
      return row;
    case NCCL_FN_COMM_SPLIT:
      row.in_group = depth > 0;
      DecodeSplit(e, row, ok && !in_flight);
      return row;
    case NCCL_FN_COMM_DESTROY:
    case NCCL_FN_COMM_ABORT:
      row.in_group = depth > 0;
      FillComm(row, pid, e.regs.arg[0]);
      if (!in_flight && e.ret == 0) comms_.erase({pid, e.regs.arg[0]});
      return row;
    default:
      break;
  }

  auto layout = Layout(e.fn);
  if (!layout) return row;
  row.in_group = depth > 0;
  const call_regs& r = e.regs;
  uint64_t comm = Arg(r, layout->comm);
  FillComm(row, pid, comm);
  row.count = S64(Arg(r, layout->count));
  int32_t dt = I32(Arg(r, layout->datatype));
  row.datatype = NcclDatatypeName(dt);
  row.bytes = NcclBytes(*row.count, dt);
  if (layout->op >= 0) row.reduce_op = NcclRedOpName(I32(Arg(r, layout->op)));
  if (layout->root >= 0) row.root = I32(Arg(r, layout->root));
  if (layout->peer >= 0) row.peer = I32(Arg(r, layout->peer));
  row.stream = Arg(r, layout->stream);
  Comm* c = Lookup(pid, comm);
  if (c && ok) {
    if (e.fn == NCCL_FN_SEND) {
      row.seq = ++c->send_seq[*row.peer];
    } else if (e.fn == NCCL_FN_RECV) {
      row.seq = ++c->recv_seq[*row.peer];
    } else {
      row.seq = ++c->coll_seq;
    }
  }
  return row;
}

void NcclDecoder::ForgetProcess(int pid, uint64_t exec_ns) {
  auto before_exec = [exec_ns](const auto& entry) { return entry.second.since_ns < exec_ns; };
  std::erase_if(comms_, [&](const auto& entry) {
    return entry.first.first == pid && before_exec(entry);
  });
  std::erase_if(group_depth_, [&](const auto& entry) {
    return entry.first.first == pid && before_exec(entry);
  });
}

}  // namespace rs::rec
