#include "recorder/nccl_probe.h"

#include "bpf/nccl.skel.h"
#include "recorder/options.h"
#include "recorder/process_table.h"
#include "recorder/uprobe_multi.h"

namespace rs::rec {
namespace {

// Per-call functions first, then communicator setup and teardown (kSetupFirst on): the
// part --nccl-calls setup keeps. Setup rows give each communicator its rank, nranks and hashes,
// which the plugin's gpu_ops rows are joined through.
constexpr ProbedFunction kNcclFunctions[] = {
    {"ncclAllReduce", NCCL_FN_ALL_REDUCE},
    {"ncclAllGather", NCCL_FN_ALL_GATHER},
    {"ncclReduceScatter", NCCL_FN_REDUCE_SCATTER},
    {"ncclBroadcast", NCCL_FN_BROADCAST},
    {"ncclBcast", NCCL_FN_BCAST},
    {"ncclReduce", NCCL_FN_REDUCE},
    {"ncclSend", NCCL_FN_SEND},
    {"ncclRecv", NCCL_FN_RECV},
    {"ncclGroupStart", NCCL_FN_GROUP_START},
    {"ncclGroupEnd", NCCL_FN_GROUP_END},
    // setup and teardown
    {"ncclCommInitRank", NCCL_FN_COMM_INIT_RANK | NCCL_READ_UNIQUE_ID | NCCL_OUT_ARG0},
    {"ncclCommInitRankConfig", NCCL_FN_COMM_INIT_RANK_CONFIG | NCCL_READ_UNIQUE_ID | NCCL_OUT_ARG0},
    {"ncclCommInitAll", NCCL_FN_COMM_INIT_ALL | NCCL_OUT_ARG0_ARRAY},
    {"ncclCommSplit", NCCL_FN_COMM_SPLIT | NCCL_OUT_ARG3},
    {"ncclCommDestroy", NCCL_FN_COMM_DESTROY},
    {"ncclCommAbort", NCCL_FN_COMM_ABORT},
    {"ncclCommUserRank", NCCL_FN_COMM_USER_RANK | NCCL_OUT_ARG1_INT},
    {"ncclCommCount", NCCL_FN_COMM_COUNT | NCCL_OUT_ARG1_INT},
};

constexpr size_t kSetupFirst = 10;
static_assert(kNcclFunctions[kSetupFirst].cookie ==
              (NCCL_FN_COMM_INIT_RANK | NCCL_READ_UNIQUE_ID | NCCL_OUT_ARG0));

}  // namespace

std::span<const ProbedFunction> NcclFunctions(bool setup_only) {
  std::span<const ProbedFunction> all(kNcclFunctions);
  return setup_only ? all.subspan(kSetupFirst) : all;
}

rs::Result<rs::Statement> PrepareNcclInsert(rs::Db& db) {
  return PrepareInsert(
      db, "nccl_events",
      "id, node, timestamp_ns, duration_ns, pid, tid, op, rank, nranks,"
      " comm_id_hash, comm, seq, count, datatype, reduce_op, bytes, peer, root,"
      " stream, ret, in_group, state, stack_id, nccl_comm_hash, split_color, split_key,"
      " split_seq");
}

rs::Result<void> WriteNcclRow(rs::Statement& st, const NcclRow& row, const std::string& node,
                              int64_t id, int64_t timestamp_ns, std::optional<int64_t> stack_id) {
  st.Bind(1, id).Bind(2, node).Bind(3, timestamp_ns).Bind(4, row.duration_ns);
  st.Bind(5, row.pid).Bind(6, row.tid).Bind(7, row.op).Bind(8, row.rank).Bind(9, row.nranks);
  st.Bind(10, row.comm_id_hash).Bind(11, row.comm).Bind(12, row.seq).Bind(13, row.count);
  st.Bind(14, row.datatype).Bind(15, row.reduce_op).Bind(16, row.bytes).Bind(17, row.peer);
  st.Bind(18, row.root).Bind(19, row.stream).Bind(20, row.ret).Bind(21, row.in_group ? 1 : 0);
  st.Bind(22, row.in_flight ? "in_flight" : "complete").Bind(23, stack_id);
  st.Bind(24, row.nccl_comm_hash).Bind(25, row.split_color).Bind(26, row.split_key);
  st.Bind(27, row.split_seq);
  return st.Run();
}

rs::Result<CallProbe::Skeleton> NcclProbe::Load(RecorderContext& ctx, const LoadOptions& opts) {
  const SkeletonOps<nccl_bpf> ops{&nccl_bpf__open, &nccl_bpf__load, &nccl_bpf__destroy};
  auto own = [](nccl_bpf* s) {
    return OwnParts{s->progs.nccl_entry, s->progs.nccl_return, s->maps.nccl_events,
                    s->maps.nccl_active};
  };
  ASSIGN_OR_RETURN(Skeleton loaded, LoadSkeleton<nccl_bpf>(ops, own, ctx, opts, "libnccl.so"));
  ASSIGN_OR_RETURN(insert_, PrepareNcclInsert(*ctx.db));
  return loaded;
}

std::vector<std::string> NcclProbe::ExplicitLibraries(const RecorderOptions& opts) const {
  return opts.nccl_libs;
}

uint64_t NcclProbe::EntryNs(const void* data) const {
  return static_cast<const nccl_event*>(data)->entry_ns;
}

uint64_t NcclProbe::ExitNs(const void* data) const {
  return static_cast<const nccl_event*>(data)->exit_ns;
}

void NcclProbe::OnEvent(const void* data, size_t size, bool in_flight) {
  const nccl_event e = CopyEvent<nccl_event>(data, size, in_flight);
  std::optional<NcclRow> row = decoder_.Decode(e);
  if (auto init = decoder_.TakeInit(); init && ctx_->processes) {
    (void)ctx_->processes->SetNcclRank(init->pid, init->rank, init->nranks);
  }
  NoteProcess(static_cast<int>(e.pid));
  if (!row) return;
  NoteWrite(WriteNcclRow(insert_, *row, ctx_->node, NextId(), WallNs(row->entry_mono_ns),
                         StackFor(row->pid, row->caller)));
}

rs::Result<void> NcclProbe::WriteMetadata(RecorderContext& ctx, uint64_t in_flight) {
  if (!ctx.db) return rs::Ok();
  ASSIGN_OR_RETURN(rs::Statement st,
                   ctx.db->Prepare("INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)"));
  // Communicators created before recording started: their rows have rank, nranks and
  // comm_id_hash NULL (never guessed), and seq counts from the first call seen.
  RETURN_IF_ERROR(
      st.Bind(1, "nccl_unknown_comms").Bind(2, std::to_string(decoder_.unknown_comms())).Run());
  RETURN_IF_ERROR(st.Bind(1, "nccl_in_flight").Bind(2, std::to_string(in_flight)).Run());
  // Which calls were probed (--nccl-calls): 'all', or 'setup' (no per-call rows).
  RETURN_IF_ERROR(st.Bind(1, "nccl_calls").Bind(2, setup_only_ ? "setup" : "all").Run());
  return rs::Ok();
}

std::unique_ptr<Probe> MakeNcclProbe(const RecorderOptions& opts) {
  return std::make_unique<NcclProbe>(opts.nccl_calls_setup_only);
}

}  // namespace rs::rec
