#include "process_group.h"

#include "nonblocking.h"

#include <numeric>

namespace trainer {

size_t Tensor::numel() const {
  return std::accumulate(shape.begin(), shape.end(), size_t{1},
                         [](size_t a, int64_t b) { return a * static_cast<size_t>(b); });
}

size_t Tensor::bytes() const {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return numel();
    case ncclFloat16:
    case ncclBfloat16:
      return numel() * 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return numel() * 4;
    default:
      return numel() * 8;
  }
}

const char* TorchDtypeName(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return "Char";
    case ncclUint8:
      return "Byte";
    case ncclInt32:
      return "Int";
    case ncclInt64:
      return "Long";
    case ncclFloat16:
      return "Half";
    case ncclFloat32:
      return "Float";
    case ncclFloat64:
      return "Double";
    case ncclBfloat16:
      return "BFloat16";
    default:
      return "Undefined";
  }
}

rs::Result<ProcessGroup> ProcessGroup::Create(Role role, FrGroup info, ncclComm_t comm,
                                              int group_rank, FlightRecorder* fr) {
  ProcessGroup g;
  g.role_ = role;
  g.info_ = std::move(info);
  g.comm_ = comm;
  g.group_rank_ = group_rank;
  g.fr_ = fr;
  // Each ProcessGroupNCCL takes a stream of its own from the pool for its device.
  if (cudaStreamCreateWithFlags(&g.stream_, cudaStreamNonBlocking) != cudaSuccess ||
      cudaEventCreateWithFlags(&g.ready_, cudaEventDisableTiming) != cudaSuccess ||
      cudaEventCreateWithFlags(&g.done_, cudaEventDisableTiming) != cudaSuccess) {
    return rs::Error(std::string("process group ") + g.info_.name + " (" + g.info_.desc +
                     "): cannot create its CUDA stream and events");
  }
  if (fr != nullptr) fr->AddGroup(g.info_);
  return g;
}

ProcessGroup::ProcessGroup(ProcessGroup&& o) noexcept
    : role_(o.role_),
      info_(std::move(o.info_)),
      group_rank_(o.group_rank_),
      comm_(o.comm_),
      stream_(o.stream_),
      ready_(o.ready_),
      done_(o.done_),
      fr_(o.fr_),
      seq_collective_(o.seq_collective_),
      seq_p2p_(o.seq_p2p_),
      op_id_(o.op_id_) {
  o.comm_ = nullptr;
  o.stream_ = nullptr;
  o.ready_ = o.done_ = nullptr;
}

ProcessGroup::~ProcessGroup() {
  if (ready_ != nullptr) cudaEventDestroy(ready_);
  if (done_ != nullptr) cudaEventDestroy(done_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

rs::Result<void> ProcessGroup::Check(ncclResult_t r, const char* what) {
  r = Settle(comm_, r);  // a non-blocking communicator's call, polled until done
  if (r == ncclSuccess) return rs::Ok();
  return rs::Error(std::string(what) + " on process group " + info_.name + " (" + info_.desc +
                   ") failed: " + ncclGetErrorString(r) +
                   " (a peer rank died or the network failed)");
}

rs::Result<void> ProcessGroup::Before(cudaStream_t compute) {
  if (cudaEventRecord(ready_, compute) != cudaSuccess ||
      cudaStreamWaitEvent(stream_, ready_, 0) != cudaSuccess) {
    return rs::Error("process group " + info_.name + ": ordering its stream after the caller's");
  }
  return rs::Ok();
}

rs::Result<void> ProcessGroup::After(cudaStream_t compute) {
  if (cudaEventRecord(done_, stream_) != cudaSuccess ||
      cudaStreamWaitEvent(compute, done_, 0) != cudaSuccess) {
    return rs::Error("process group " + info_.name + ": ordering the caller's stream after it");
  }
  return rs::Ok();
}

FrOp ProcessGroup::Entry(const std::string& name, std::vector<std::vector<int64_t>> in_sizes,
                         std::vector<std::string> in_types,
                         std::vector<std::vector<int64_t>> out_sizes,
                         std::vector<std::string> out_types, bool p2p,
                         std::vector<FrFrame> frames) const {
  FrOp op;
  op.group = &info_;
  op.collective_seq_id = seq_collective_;
  op.p2p_seq_id = seq_p2p_;
  op.op_id = op_id_;
  op.profiling_name = name;
  op.input_sizes = std::move(in_sizes);
  op.input_dtypes = std::move(in_types);
  op.output_sizes = std::move(out_sizes);
  op.output_dtypes = std::move(out_types);
  op.is_p2p = p2p;
  op.frames = std::move(frames);
  return op;
}

rs::Result<void> ProcessGroup::AllReduce(const Tensor& t, ncclRedOp_t op, cudaStream_t compute,
                                         std::vector<FrFrame> frames) {
  ++seq_collective_;
  ++op_id_;
  RETURN_IF_ERROR(Before(compute));
  int64_t id = -1;
  if (fr_ != nullptr) {
    id = fr_->Begin(Entry("nccl:all_reduce", {t.shape}, {TorchDtypeName(t.type)}, {t.shape},
                          {TorchDtypeName(t.type)}, false, std::move(frames)),
                    stream_);
  }
  RETURN_IF_ERROR(
      Check(ncclAllReduce(t.data, t.data, t.numel(), t.type, op, comm_, stream_), "all_reduce"));
  if (fr_ != nullptr) fr_->End(id, stream_);
  return After(compute);
}

rs::Result<void> ProcessGroup::ReduceScatter(const Tensor& in, const Tensor& out, ncclRedOp_t op,
                                             cudaStream_t compute, std::vector<FrFrame> frames) {
  ++seq_collective_;
  ++op_id_;
  RETURN_IF_ERROR(Before(compute));
  int64_t id = -1;
  if (fr_ != nullptr) {
    id = fr_->Begin(Entry("nccl:_reduce_scatter_base", {in.shape}, {TorchDtypeName(in.type)},
                          {out.shape}, {TorchDtypeName(out.type)}, false, std::move(frames)),
                    stream_);
  }
  RETURN_IF_ERROR(
      Check(ncclReduceScatter(in.data, out.data, out.numel(), out.type, op, comm_, stream_),
            "reduce_scatter_tensor"));
  if (fr_ != nullptr) fr_->End(id, stream_);
  return After(compute);
}

rs::Result<void> ProcessGroup::AllGather(const Tensor& in, const Tensor& out, cudaStream_t compute,
                                         std::vector<FrFrame> frames) {
  ++seq_collective_;
  ++op_id_;
  RETURN_IF_ERROR(Before(compute));
  int64_t id = -1;
  if (fr_ != nullptr) {
    id = fr_->Begin(Entry("nccl:_all_gather_base", {in.shape}, {TorchDtypeName(in.type)},
                          {out.shape}, {TorchDtypeName(out.type)}, false, std::move(frames)),
                    stream_);
  }
  RETURN_IF_ERROR(Check(ncclAllGather(in.data, out.data, in.numel(), in.type, comm_, stream_),
                        "all_gather_into_tensor"));
  if (fr_ != nullptr) fr_->End(id, stream_);
  return After(compute);
}

rs::Result<void> ProcessGroup::AllToAll(const Tensor& in, const Tensor& out, cudaStream_t compute,
                                        std::vector<FrFrame> frames) {
  ++seq_collective_;
  ++op_id_;
  RETURN_IF_ERROR(Before(compute));
  int64_t id = -1;
  if (fr_ != nullptr) {
    id = fr_->Begin(Entry("nccl:all_to_all", {in.shape}, {TorchDtypeName(in.type)}, {out.shape},
                          {TorchDtypeName(out.type)}, false, std::move(frames)),
                    stream_);
  }
  const int n = size();
  const size_t send_block = in.bytes() / static_cast<size_t>(n);
  const size_t recv_block = out.bytes() / static_cast<size_t>(n);
  const size_t send_count = in.numel() / static_cast<size_t>(n);
  const size_t recv_count = out.numel() / static_cast<size_t>(n);
  RETURN_IF_ERROR(Check(ncclGroupStart(), "all_to_all (group start)"));
  for (int r = 0; r < n; ++r) {
    auto* s = static_cast<char*>(in.data) + send_block * static_cast<size_t>(r);
    auto* d = static_cast<char*>(out.data) + recv_block * static_cast<size_t>(r);
    ncclResult_t a = ncclSend(s, send_count, in.type, r, comm_, stream_);
    ncclResult_t b = ncclRecv(d, recv_count, out.type, r, comm_, stream_);
    if (a != ncclSuccess || b != ncclSuccess) {
      ncclGroupEnd();
      return Check(a != ncclSuccess ? a : b, "all_to_all");
    }
  }
  RETURN_IF_ERROR(Check(ncclGroupEnd(), "all_to_all"));
  if (fr_ != nullptr) fr_->End(id, stream_);
  return After(compute);
}

rs::Result<void> ProcessGroup::BatchSendRecv(const std::vector<P2p>& ops, cudaStream_t compute,
                                             std::vector<FrFrame> frames) {
  if (ops.empty()) return rs::Ok();
  ++seq_p2p_;  // once per batch (startCoalescing / the batch's first p2p operation)
  RETURN_IF_ERROR(Before(compute));
  RETURN_IF_ERROR(Check(ncclGroupStart(), "batch_isend_irecv (group start)"));
  for (const P2p& p : ops) {
    ++op_id_;
    if (fr_ != nullptr) {
      // Inside a coalesced batch: an entry without events (it stays 'scheduled').
      const std::string name =
          p.send ? "nccl:send " + std::to_string(group_rank_) + "->" + std::to_string(p.peer)
                 : "nccl:recv " + std::to_string(group_rank_) + "<-" + std::to_string(p.peer);
      fr_->Begin(Entry(name, {p.tensor.shape}, {TorchDtypeName(p.tensor.type)}, {p.tensor.shape},
                       {TorchDtypeName(p.tensor.type)}, true, frames),
                 nullptr);
    }
    ncclResult_t r =
        p.send ? ncclSend(p.tensor.data, p.tensor.numel(), p.tensor.type, p.peer, comm_, stream_)
               : ncclRecv(p.tensor.data, p.tensor.numel(), p.tensor.type, p.peer, comm_, stream_);
    if (r != ncclSuccess) {
      ncclGroupEnd();
      return Check(r, p.send ? "send" : "recv");
    }
  }
  // endCoalescing: the batch's Work, 'nccl:coalesced', its start event before ncclGroupEnd and
  // its end event after.
  int64_t id = -1;
  if (fr_ != nullptr) {
    id = fr_->Begin(Entry("nccl:coalesced", {}, {}, {}, {}, true, std::move(frames)), stream_);
  }
  RETURN_IF_ERROR(Check(ncclGroupEnd(), "batch_isend_irecv"));
  if (fr_ != nullptr) fr_->End(id, stream_);
  return After(compute);
}

}  // namespace trainer
