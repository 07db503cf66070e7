#include "parallel_trainer.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda_runtime_api.h"
#include "flight_recorder.h"
#include "kernels.h"
#include "parallel_kernels.h"
#include "parallel_layout.h"
#include "pipeline_schedule.h"
#include "process_groups.h"
#include "watchdog.h"

namespace trainer {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

rs::Result<void> Cuda(cudaError_t r, const char* what) {
  if (r == cudaSuccess) return rs::Ok();
  return rs::Error(std::string(what) + " failed: " + cudaGetErrorString(r));
}

// The Python stack a Flight Recorder entry carries (innermost first): where Megatron-LM calls
// each operation. Line numbers are illustrative.
std::vector<FrFrame> Stack(std::initializer_list<FrFrame> inner) {
  std::vector<FrFrame> f(inner);
  f.push_back({"train_step", "megatron/training/training.py", 1262});
  f.push_back({"train", "megatron/training/training.py", 1871});
  f.push_back({"pretrain", "megatron/training/training.py", 412});
  f.push_back({"<module>", "pretrain_gpt.py", 291});
  return f;
}
const char* const kC10d = "torch/distributed/distributed_c10d.py";

// The step's data, as device buffers; twice the size an operation needs, so that a mismatch
// fault's wider type stays inside them.
struct Buffers {
  size_t act_n = 0;   // elements of one micro-batch's activation (bfloat16)
  size_t grad_n = 0;  // elements of the rank's gradients (float32), a multiple of dp
  std::vector<void*> act_send, act_recv, grad_send, grad_recv;  // per micro-batch
  void* tp = nullptr;
  void* ep_in = nullptr;
  void* ep_out = nullptr;
  void* grads = nullptr;
  void* shard = nullptr;
  void* params = nullptr;
  struct Status {
    float loss;
    uint32_t errors;
  };
  Status* status = nullptr;
};

rs::Result<void*> Alloc(size_t bytes) {
  void* p = nullptr;
  RETURN_IF_ERROR(Cuda(cudaMalloc(&p, 2 * bytes), "cudaMalloc"));
  return p;
}

class Job {
 public:
  Job(const TrainerOptions& o, const ParallelLayout& layout, RankGroups& groups,
      const Compute& compute, DataLoader* loader)
      : o_(o), layout_(layout), groups_(groups), compute_(compute), loader_(loader) {}

  rs::Result<void> SetUp();
  rs::Result<void> Step(int step);
  std::string Describe() const;

 private:
  rs::Result<void> Reach(FaultPoint point, int step);
  // The mismatch fault: the rank's first operation of the --fault-in group at that step.
  bool MismatchHere(FaultPoint point, int step);
  Tensor Act(void* p) const { return {p, {static_cast<int64_t>(b_.act_n / 256), 1, 256}}; }
  rs::Result<void> Busy(uint64_t ns) {
    return Cuda(LaunchForward(compute_stream_, ns), "cudaLaunchKernel");
  }
  rs::Result<void> TpAllReduce(int step, int mb, int layer, int which);
  rs::Result<void> EpAllToAll(int step, int mb, int layer, int which);
  rs::Result<void> Layers(int step, int mb, bool backward);
  rs::Result<void> Exchange(int step, const PipeAction& a);
  rs::Result<void> DataParallel(int step);
  float Stamp(int step, int mb, bool grad) const {
    return BlockValue(step * 7 + mb * 3 + (grad ? 1 : 0), 0, 0);
  }

  const TrainerOptions& o_;
  const ParallelLayout& layout_;
  RankGroups& groups_;
  const Compute& compute_;
  DataLoader* loader_;
  Coords me_;
  int stage_ = 0;
  std::vector<PipeAction> schedule_;
  cudaStream_t compute_stream_ = nullptr;
  Buffers b_;
  uint64_t kernel_ns_ = 0;  // one forward kernel's device time this step
  int struck_step_ = -1;    // the mismatch already issued
};

rs::Result<void> Job::SetUp() {
  const RankEnv& e = o_.env;
  me_ = layout_.CoordsOf(e.rank);
  stage_ = me_.pp;
  schedule_ = OneFOneB(layout_.spec().pp, stage_, o_.microbatches);
  RETURN_IF_ERROR(Cuda(cudaStreamCreate(&compute_stream_), "cudaStreamCreate"));
  RegisterKernels();
  RegisterParallelKernels();
  // An activation of whole 256-element rows, the token rows divisible by ep (all-to-all).
  const size_t row = 256 * static_cast<size_t>(layout_.spec().ep);
  b_.act_n = std::max(row, static_cast<size_t>(o_.act_kb * 1024 / 2) / row * row);
  const size_t dp = static_cast<size_t>(layout_.spec().dp);
  b_.grad_n = std::max(dp, static_cast<size_t>(o_.grad_mb * (1 << 20) / 4) / dp * dp);
  const size_t act_bytes = b_.act_n * 2;
  for (int mb = 0; mb < o_.microbatches; ++mb) {
    for (auto* v : {&b_.act_send, &b_.act_recv, &b_.grad_send, &b_.grad_recv}) {
      ASSIGN_OR_RETURN(void* p, Alloc(act_bytes));
      v->push_back(p);
    }
  }
  ASSIGN_OR_RETURN(b_.tp, Alloc(act_bytes));
  ASSIGN_OR_RETURN(b_.ep_in, Alloc(act_bytes));
  ASSIGN_OR_RETURN(b_.ep_out, Alloc(act_bytes));
  ASSIGN_OR_RETURN(b_.grads, Alloc(b_.grad_n * 4));
  ASSIGN_OR_RETURN(b_.shard, Alloc(b_.grad_n / dp * 4));
  ASSIGN_OR_RETURN(b_.params, Alloc(b_.grad_n * 4));
  void* s = nullptr;
  RETURN_IF_ERROR(Cuda(cudaMalloc(&s, sizeof(Buffers::Status)), "cudaMalloc"));
  b_.status = static_cast<Buffers::Status*>(s);
  return rs::Ok();
}

std::string Job::Describe() const {
  std::string s = "stage " + std::to_string(stage_) + ", tp rank " + std::to_string(me_.tp) +
                  ", dp rank " + std::to_string(me_.dp);
  if (layout_.spec().ep > 1) s += ", ep rank " + std::to_string(me_.ep);
  return s;
}

rs::Result<void> Job::Reach(FaultPoint point, int step) {
  if (o_.fault_in != point) return rs::Ok();
  const std::string where =
      point == FaultPoint::kStep
          ? std::string("at the step's start")
          : std::string("before its first ") + FaultPointName(point) + " operation of the step";
  if (step == o_.crash_at_step) {
    std::fprintf(stderr, "rank %d: dying at step %d, %s\n", o_.env.rank, step, where.c_str());
    kill(getpid(), SIGKILL);
  }
  if (step == o_.hang_at_step) {
    std::fprintf(stderr, "rank %d: issuing nothing from step %d on, %s\n", o_.env.rank, step,
                 where.c_str());
    for (;;) pause();
  }
  return rs::Ok();
}

bool Job::MismatchHere(FaultPoint point, int step) {
  if (o_.mismatch == Mismatch::kNone || o_.fault_in != point || step != o_.mismatch_at_step ||
      struck_step_ == step) {
    return false;
  }
  struck_step_ = step;
  std::fprintf(stderr, "rank %d: issuing its first %s operation of step %d with another %s\n",
               o_.env.rank, FaultPointName(point), step, MismatchName(o_.mismatch));
  return true;
}

// A tensor as the faulty rank issues it: half the rows, or the next wider type.
Tensor Mismatched(Tensor t, Mismatch m) {
  if (m == Mismatch::kSize) t.shape[0] = std::max<int64_t>(1, t.shape[0] / 2);
  if (m == Mismatch::kDtype) t.type = t.type == ncclBfloat16 ? ncclFloat32 : ncclFloat64;
  return t;
}

rs::Result<void> Job::TpAllReduce(int step, int mb, int layer, int which) {
  ProcessGroup* g = groups_.Of(Role::kTp);
  if (g == nullptr) return rs::Ok();
  const int tp = g->size();
  const int k = (step + mb + layer + which) % 3;
  RETURN_IF_ERROR(Cuda(LaunchFill(compute_stream_, b_.tp, ncclBfloat16, b_.act_n,
                                  static_cast<float>(me_.tp + 1 + k)),
                       "cudaLaunchKernel"));
  RETURN_IF_ERROR(Reach(FaultPoint::kTp, step));
  Tensor t = Act(b_.tp);
  ncclRedOp_t op = ncclSum;
  if (MismatchHere(FaultPoint::kTp, step)) {
    t = Mismatched(t, o_.mismatch);
    if (o_.mismatch == Mismatch::kOp) op = ncclMax;
  }
  const bool backward = which >= 2;
  RETURN_IF_ERROR(g->AllReduce(
      t, op, compute_stream_,
      Stack({{"all_reduce", kC10d, 2950},
             {"_reduce", "megatron/core/tensor_parallel/mappings.py", 34},
             {backward ? "backward" : "forward", "megatron/core/tensor_parallel/layers.py",
              backward ? 573 : 1010},
             {backward ? "backward_step" : "forward_step",
              "megatron/core/pipeline_parallel/schedules.py", backward ? 461 : 409}})));
  return Cuda(LaunchCheck(compute_stream_, b_.tp, ncclBfloat16, b_.act_n,
                          static_cast<float>(tp * (tp + 1) / 2 + tp * k), &b_.status->errors),
              "cudaLaunchKernel");
}

rs::Result<void> Job::EpAllToAll(int step, int mb, int layer, int which) {
  ProcessGroup* g = groups_.Of(Role::kEp);
  const int n = g->size();
  const size_t block = b_.act_n / static_cast<size_t>(n);
  const int64_t salt = step + mb + layer + which;
  RETURN_IF_ERROR(Cuda(
      LaunchFillBlocks(compute_stream_, b_.ep_in, ncclBfloat16, n, block, me_.ep * 8 + salt, 1),
      "cudaLaunchKernel"));
  RETURN_IF_ERROR(Reach(FaultPoint::kEp, step));
  Tensor in{b_.ep_in, {static_cast<int64_t>(b_.act_n / 256), 256}};
  Tensor out{b_.ep_out, in.shape};
  if (MismatchHere(FaultPoint::kEp, step)) {
    in = Mismatched(in, o_.mismatch);
    out = Mismatched(out, o_.mismatch);
  }
  RETURN_IF_ERROR(g->AllToAll(
      in, out, compute_stream_,
      Stack({{"all_to_all_single", kC10d, 4387},
             {"forward", "megatron/core/tensor_parallel/mappings.py", 450},
             {which % 2 == 0 ? "token_permutation" : "token_unpermutation",
              "megatron/core/transformer/moe/token_dispatcher.py", which % 2 == 0 ? 705 : 864},
             {"forward", "megatron/core/transformer/moe/moe_layer.py", 244}})));
  return Cuda(LaunchCheckBlocks(compute_stream_, b_.ep_out, ncclBfloat16, n, block, me_.ep + salt,
                                8, &b_.status->errors),
              "cudaLaunchKernel");
}

rs::Result<void> Job::Layers(int step, int mb, bool backward) {
  const bool moe = layout_.spec().ep > 1;
  const uint64_t ns = backward ? 2 * kernel_ns_ : kernel_ns_;
  for (int i = 0; i < o_.layers; ++i) {
    const int layer = backward ? o_.layers - 1 - i : i;
    const int w = backward ? 2 : 0;  // which all-reduce / all-to-all of the layer
    RETURN_IF_ERROR(Busy(ns));       // attention
    RETURN_IF_ERROR(TpAllReduce(step, mb, layer, w));
    if (moe) {
      RETURN_IF_ERROR(EpAllToAll(step, mb, layer, w));
      RETURN_IF_ERROR(Busy(ns));  // the local experts
      RETURN_IF_ERROR(EpAllToAll(step, mb, layer, w + 1));
    } else {
      RETURN_IF_ERROR(Busy(ns));  // MLP
    }
    RETURN_IF_ERROR(TpAllReduce(step, mb, layer, w + 1));
  }
  // What goes to the neighbouring stage: the activation (forward) or its gradient.
  const bool send = backward ? stage_ > 0 : stage_ < layout_.spec().pp - 1;
  if (!send) return rs::Ok();
  void* out =
      backward ? b_.grad_send[static_cast<size_t>(mb)] : b_.act_send[static_cast<size_t>(mb)];
  return Cuda(LaunchFill(compute_stream_, out, ncclBfloat16, b_.act_n, Stamp(step, mb, backward)),
              "cudaLaunchKernel");
}

rs::Result<void> Job::Exchange(int step, const PipeAction& a) {
  ProcessGroup* g = groups_.Of(Role::kPp);
  RETURN_IF_ERROR(Reach(FaultPoint::kPp, step));
  const bool mismatch = MismatchHere(FaultPoint::kPp, step);
  std::vector<ProcessGroup::P2p> ops;
  for (const PipeOp& p : a.ops) {
    const size_t mb = static_cast<size_t>(p.microbatch);
    void* buf = p.send ? (p.backward ? b_.grad_send[mb] : b_.act_send[mb])
                       : (p.backward ? b_.grad_recv[mb] : b_.act_recv[mb]);
    Tensor t = Act(buf);
    if (mismatch && ops.empty()) t = Mismatched(t, o_.mismatch);
    ops.push_back({p.send, g->rank() + (p.next ? 1 : -1), t});
  }
  RETURN_IF_ERROR(g->BatchSendRecv(
      ops, compute_stream_,
      Stack({{"batch_isend_irecv", kC10d, 2816},
             {"_batched_p2p_ops", "megatron/core/pipeline_parallel/p2p_communication.py", 54},
             {"_communicate", "megatron/core/pipeline_parallel/p2p_communication.py", 402},
             {a.name, "megatron/core/pipeline_parallel/p2p_communication.py", 480},
             {"forward_backward_pipelining_without_interleaving",
              "megatron/core/pipeline_parallel/schedules.py", 2032}})));
  for (const PipeOp& p : a.ops) {
    if (p.send) continue;
    const size_t mb = static_cast<size_t>(p.microbatch);
    RETURN_IF_ERROR(Cuda(
        LaunchCheck(compute_stream_, p.backward ? b_.grad_recv[mb] : b_.act_recv[mb], ncclBfloat16,
                    b_.act_n, Stamp(step, p.microbatch, p.backward), &b_.status->errors),
        "cudaLaunchKernel"));
  }
  // batch_p2p_sync: torch.cuda.synchronize() after every exchange.
  if (o_.batch_p2p_sync) RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
  return rs::Ok();
}

rs::Result<void> Job::DataParallel(int step) {
  ProcessGroup* g = groups_.Of(Role::kDp);
  if (g == nullptr) return rs::Ok();
  const int dp = g->size();
  const size_t shard_n = b_.grad_n / static_cast<size_t>(dp);
  const int k = step % 3;
  RETURN_IF_ERROR(Cuda(LaunchFill(compute_stream_, b_.grads, ncclFloat32, b_.grad_n,
                                  static_cast<float>(me_.dp + 1 + k)),
                       "cudaLaunchKernel"));
  RETURN_IF_ERROR(Reach(FaultPoint::kDp, step));
  Tensor in{b_.grads, {static_cast<int64_t>(b_.grad_n)}, ncclFloat32};
  Tensor out{b_.shard, {static_cast<int64_t>(shard_n)}, ncclFloat32};
  ncclRedOp_t op = ncclSum;
  if (MismatchHere(FaultPoint::kDp, step)) {
    in = Mismatched(in, o_.mismatch);
    out = Mismatched(out, o_.mismatch);
    if (o_.mismatch == Mismatch::kOp) op = ncclMax;
  }
  const std::vector<FrFrame> grads = {
      {"start_grad_sync", "megatron/core/distributed/param_and_grad_buffer.py", 521},
      {"finalize_model_grads", "megatron/core/distributed/finalize_model_grads.py", 310}};
  RETURN_IF_ERROR(
      g->ReduceScatter(in, out, op, compute_stream_,
                       Stack({{"reduce_scatter_tensor", kC10d, 4205}, grads[0], grads[1]})));
  RETURN_IF_ERROR(
      Cuda(LaunchCheck(compute_stream_, b_.shard, ncclFloat32, shard_n,
                       static_cast<float>(dp * (dp + 1) / 2 + dp * k), &b_.status->errors),
           "cudaLaunchKernel"));
  // The distributed optimizer updates its shard, then gathers the parameters.
  RETURN_IF_ERROR(Busy(kernel_ns_));
  RETURN_IF_ERROR(Cuda(
      LaunchFill(compute_stream_, b_.shard, ncclFloat32, shard_n, BlockValue(step % 5, 1, me_.dp)),
      "cudaLaunchKernel"));
  RETURN_IF_ERROR(g->AllGather(
      Tensor{b_.shard, {static_cast<int64_t>(shard_n)}, ncclFloat32},
      Tensor{b_.params, {static_cast<int64_t>(b_.grad_n)}, ncclFloat32}, compute_stream_,
      Stack({{"all_gather_into_tensor", kC10d, 3867},
             {"start_param_sync", "megatron/core/distributed/param_and_grad_buffer.py", 402},
             {"step", "megatron/core/optimizer/distrib_optimizer.py", 2284}})));
  return Cuda(LaunchCheckBlocks(compute_stream_, b_.params, ncclFloat32, dp, shard_n, step % 5, 1,
                                &b_.status->errors),
              "cudaLaunchKernel");
}

rs::Result<void> Job::Step(int step) {
  auto t0 = Clock::now();
  if (loader_ != nullptr) RETURN_IF_ERROR(loader_->ReadNext(o_.data_kb_per_step));
  const double data_ms = MsSince(t0);
  RETURN_IF_ERROR(Reach(FaultPoint::kStep, step));
  auto t1 = Clock::now();
  compute_.Run(o_.compute_ms * (1 - o_.gpu_share));
  const double host_ms = MsSince(t1);
  auto t2 = Clock::now();
  const double factor = step >= o_.slow_from_step ? o_.slow_factor : 1.0;
  // Forward kernels take a third of a micro-batch's device time, backward two thirds; two
  // kernels per layer; 2% of the step for the optimizer.
  const double device_ns = o_.compute_ms * o_.gpu_share * factor * 1e6;
  kernel_ns_ = static_cast<uint64_t>(device_ns * 0.98 / (o_.microbatches * o_.layers * 6));
  RETURN_IF_ERROR(Cuda(cudaMemsetAsync(&b_.status->errors, 0, sizeof(uint32_t), compute_stream_),
                       "cudaMemsetAsync"));
  for (const PipeAction& a : schedule_) {
    if (a.kind == PipeAction::kExchange) {
      RETURN_IF_ERROR(Exchange(step, a));
    } else {
      RETURN_IF_ERROR(Layers(step, a.microbatch, a.kind == PipeAction::kBackward));
    }
  }
  RETURN_IF_ERROR(DataParallel(step));
  RETURN_IF_ERROR(Cuda(LaunchOptimizer(compute_stream_, &b_.status->loss, step,
                                       static_cast<uint64_t>(device_ns * 0.02)),
                       "cudaLaunchKernel"));
  const double issue_ms = MsSince(t2);
  // The step's sync point: the loss (and the checks' count) copied to the host.
  auto t3 = Clock::now();
  Buffers::Status st{};
  RETURN_IF_ERROR(
      Cuda(cudaMemcpy(&st, b_.status, sizeof(st), cudaMemcpyDeviceToHost), "cudaMemcpy"));
  const double sync_ms = MsSince(t3);
  if (st.loss != static_cast<float>(step)) {
    return rs::Error("loss of step " + std::to_string(step) + " is " + std::to_string(st.loss));
  }
  if (st.errors != 0) {
    std::fprintf(stderr,
                 "rank %d: WARNING: %u checks of received data failed at step %d (a peer issued "
                 "another size, type or op?)\n",
                 o_.env.rank, st.errors, step);
  }
  std::printf("step %d data_ms=%.2f host_ms=%.2f issue_ms=%.2f sync_ms=%.2f total_ms=%.2f\n", step,
              data_ms, host_ms, issue_ms, sync_ms, MsSince(t0));
  std::fflush(stdout);
  return rs::Ok();
}

}  // namespace

rs::Result<void> TrainParallel(const TrainerOptions& o, ncclComm_t world, const Compute& compute,
                               DataLoader* loader) {
  const RankEnv& e = o.env;
  ASSIGN_OR_RETURN(ParallelLayout layout,
                   ParallelLayout::Create(*o.parallel, e.world_size, e.local_world_size));
  if (o.fault_in != FaultPoint::kStep) {
    const Role role = o.fault_in == FaultPoint::kTp   ? Role::kTp
                      : o.fault_in == FaultPoint::kPp ? Role::kPp
                      : o.fault_in == FaultPoint::kDp ? Role::kDp
                                                      : Role::kEp;
    if (layout.GroupSize(role) == 1) {
      return rs::Error(std::string("--fault-in ") + FaultPointName(o.fault_in) +
                       ": the job has no " + RoleName(role) + " group (" + ToString(*o.parallel) +
                       ")");
    }
  }
  std::unique_ptr<FlightRecorder> fr = FlightRecorderFor(o);
  auto t0 = Clock::now();
  ASSIGN_OR_RETURN(std::unique_ptr<RankGroups> groups,
                   CreateGroups(layout, e.rank, world, fr.get()));
  const double groups_ms = MsSince(t0);
  std::unique_ptr<Watchdog> watchdog;
  if (o.async) {
    std::vector<ncclComm_t> comms{world};
    for (ProcessGroup& g : groups->groups) comms.push_back(g.comm());
    FlightRecorder* f = fr.get();
    watchdog = std::make_unique<Watchdog>(comms, e.rank, [f] {
      if (f != nullptr) f->DumpNow("a communicator reported an error: writing the dump");
    });
  }
  Job job(o, layout, *groups, compute, loader);
  RETURN_IF_ERROR(job.SetUp());
  std::string names;
  for (ProcessGroup& g : groups->groups) {
    names += " " + std::string(RoleName(g.role())) + "=" + g.info().name;
  }
  std::printf(
      "rank %d/%d (node %d, local rank %d): ready, %s, %s; %zu groups split in %.0f ms:%s\n",
      e.rank, e.world_size, e.group_rank, e.local_rank, ToString(*o.parallel).c_str(),
      job.Describe().c_str(), groups->groups.size(), groups_ms, names.c_str());
  std::fflush(stdout);
  if (o.warmup_ms > 0) usleep(static_cast<useconds_t>(o.warmup_ms) * 1000);
  const auto start = Clock::now();
  for (int step = 0; step < o.steps; ++step) RETURN_IF_ERROR(job.Step(step));
  const double seconds = MsSince(start) / 1000;
  std::printf("done: rank %d steps=%d seconds=%.3f steps_per_s=%.3f\n", e.rank, o.steps, seconds,
              o.steps / seconds);
  std::fflush(stdout);
  watchdog.reset();  // its callback uses the Flight Recorder
  fr.reset();
  return rs::Ok();
}

}  // namespace trainer
