// One process group of a multi-group job, as PyTorch's ProcessGroupNCCL runs it for
// Megatron-LM (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, torch/csrc/cuda/nccl.cpp):
//  - its own NCCL communicator (split from the world's: process_groups.h) and its own CUDA
//    stream; before an operation the group's stream waits for the caller's (compute) stream
//    (syncStream), the NCCL call goes on the group's stream, and the caller's stream then
//    waits for the group's (Work::wait() of a synchronous c10d call): no host blocks;
//  - sequence numbers as ProcessGroupNCCL counts them: seqCollective_ per collective (and per
//    coalesced batch of collectives), seqP2P_ per send/recv outside a batch and once per
//    batch_isend_irecv, op_id_ per operation;
//  - what each call records in the Flight Recorder (flight_recorder.h), with PyTorch's
//    profiling names: 'nccl:all_reduce', 'nccl:_reduce_scatter_base' (reduce_scatter_tensor),
//    'nccl:_all_gather_base' (all_gather_into_tensor), 'nccl:all_to_all' (all_to_all_single),
//    and for batch_isend_irecv one entry per operation ('nccl:send 0->1', 'nccl:recv 1<-0',
//    group ranks, without events) then 'nccl:coalesced' with the batch's events.
// all_to_all_single with split sizes (Megatron's MoE token dispatch,
// megatron/core/tensor_parallel/mappings.py) becomes, in torch/csrc/cuda/nccl.cpp's
// all2all_single_unequal_split, one ncclGroupStart/End around an ncclSend and an ncclRecv to
// every member, itself included: what AllToAll issues. (all_to_all_single without splits would
// call ncclAlltoAll on NCCL >= 2.28, all2all_single_equal_split.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flight_recorder.h"
#include "nccl.h"
#include "parallel_layout.h"
#include "rscore/result.h"

namespace trainer {

// A tensor as an operation sees it: device memory, shape, NCCL type.
struct Tensor {
  void* data = nullptr;
  std::vector<int64_t> shape;
  ncclDataType_t type = ncclBfloat16;
  size_t numel() const;
  size_t bytes() const;
};
const char* TorchDtypeName(ncclDataType_t t);  // c10::toString(ScalarType): "BFloat16", ...

class ProcessGroup {
 public:
  // `fr` may be null (no Flight Recorder).
  static rs::Result<ProcessGroup> Create(Role role, FrGroup info, ncclComm_t comm, int group_rank,
                                         FlightRecorder* fr);
  ProcessGroup(ProcessGroup&&) noexcept;
  ProcessGroup& operator=(ProcessGroup&&) = delete;
  ~ProcessGroup();

  Role role() const { return role_; }
  const FrGroup& info() const { return info_; }
  int size() const { return static_cast<int>(info_.ranks.size()); }
  int rank() const { return group_rank_; }
  ncclComm_t comm() const { return comm_; }
  cudaStream_t stream() const { return stream_; }

  rs::Result<void> AllReduce(const Tensor& t, ncclRedOp_t op, cudaStream_t compute,
                             std::vector<FrFrame> frames);
  // reduce_scatter_tensor: `in` holds size() chunks of `out`'s shape.
  rs::Result<void> ReduceScatter(const Tensor& in, const Tensor& out, ncclRedOp_t op,
                                 cudaStream_t compute, std::vector<FrFrame> frames);
  // all_gather_into_tensor: `out` holds size() chunks of `in`'s shape.
  rs::Result<void> AllGather(const Tensor& in, const Tensor& out, cudaStream_t compute,
                             std::vector<FrFrame> frames);
  // all_to_all_single with split sizes: block j of `in` to member j, block i of `out` from
  // member i (`in` and `out` hold size() blocks).
  rs::Result<void> AllToAll(const Tensor& in, const Tensor& out, cudaStream_t compute,
                            std::vector<FrFrame> frames);
  struct P2p {
    bool send = false;
    int peer = 0;  // group rank
    Tensor tensor;
  };
  // batch_isend_irecv: the operations in one NCCL group.
  rs::Result<void> BatchSendRecv(const std::vector<P2p>& ops, cudaStream_t compute,
                                 std::vector<FrFrame> frames);

  // How many collectives / batches the group issued (tests, logs).
  int64_t collective_seq() const { return seq_collective_; }
  int64_t p2p_seq() const { return seq_p2p_; }

 private:
  ProcessGroup() = default;
  rs::Result<void> Before(cudaStream_t compute);
  rs::Result<void> After(cudaStream_t compute);
  rs::Result<void> Check(ncclResult_t r, const char* what);
  FrOp Entry(const std::string& name, std::vector<std::vector<int64_t>> in_sizes,
             std::vector<std::string> in_types, std::vector<std::vector<int64_t>> out_sizes,
             std::vector<std::string> out_types, bool p2p, std::vector<FrFrame> frames) const;

  Role role_ = Role::kTp;
  FrGroup info_;
  int group_rank_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;  // the caller's stream reached the operation
  cudaEvent_t done_ = nullptr;   // the group's stream finished it
  FlightRecorder* fr_ = nullptr;
  int64_t seq_collective_ = 0, seq_p2p_ = 0, op_id_ = 0;
};

}  // namespace trainer
