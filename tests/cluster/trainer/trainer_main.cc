// rankscope-trainer: one rank of a simulated data-parallel training job on the test bed,
// shaped like PyTorch DDP on a GPU (see trainer_options.cc's usage and tests/cluster/README.md:
// "What a GPU node does that the test bed reproduces"). Prints one line per step and a summary
// with steps/s.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cuda_runtime_api.h"
#include "flight_recorder.h"
#include "kernels.h"
#include "nccl.h"
#include "nonblocking.h"
#include "parallel_trainer.h"
#include "rendezvous.h"
#include "trainer_options.h"
#include "watchdog.h"
#include "workload.h"

namespace trainer {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// r settled (nonblocking.h: a non-blocking communicator's call polled until done).
rs::Result<void> Nccl(ncclComm_t comm, ncclResult_t r, const char* what, int step) {
  r = Settle(comm, r);
  if (r == ncclSuccess) return rs::Ok();
  return rs::Error(std::string(what) + " failed at step " + std::to_string(step) + ": " +
                   ncclGetErrorString(r) + " (a peer rank died or the network failed)");
}

rs::Result<void> Cuda(cudaError_t r, const char* what) {
  if (r == cudaSuccess) return rs::Ok();
  return rs::Error(std::string(what) + " failed: " + cudaGetErrorString(r));
}

rs::Result<ncclComm_t> InitWorld(const TrainerOptions& o) {
  const RankEnv& e = o.env;
  ncclUniqueId id;
  if (e.world_size == 1) {
    if (ncclGetUniqueId(&id) != ncclSuccess) return rs::Error("ncclGetUniqueId failed");
  } else if (e.rank == 0) {
    if (ncclGetUniqueId(&id) != ncclSuccess) return rs::Error("ncclGetUniqueId failed");
    RETURN_IF_ERROR(
        ServeUniqueId(id, e.master_addr, e.master_port, e.world_size, o.rendezvous_timeout_s));
  } else {
    ASSIGN_OR_RETURN(id, FetchUniqueId(e.master_addr, e.master_port, o.rendezvous_timeout_s));
  }
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclSuccess;
  if (o.nonblocking) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    r = ncclCommInitRankConfig(&comm, e.world_size, id, e.rank, &config);
    r = Settle(comm, r, Poll::kSleep);  // comm is set once the call returned
  } else {
    r = ncclCommInitRank(&comm, e.world_size, id, e.rank);
  }
  if (r != ncclSuccess) {
    return rs::Error(std::string("ncclCommInitRank failed: ") + ncclGetErrorString(r));
  }
  return comm;
}

// The rank's device resources: two streams (compute, communication), the events that order
// them, and device buffers.
struct Gpu {
  cudaStream_t compute = nullptr;
  cudaStream_t comm = nullptr;
  std::vector<cudaEvent_t> bucket_ready;
  cudaEvent_t reduced = nullptr;
  float* grads = nullptr;
  float* loss = nullptr;
  char* batch = nullptr;
  int32_t* gather_in = nullptr;
  int32_t* gather_out = nullptr;
  int32_t* bcast = nullptr;
};

rs::Result<Gpu> SetUpGpu(const TrainerOptions& o, size_t count, size_t batch_bytes) {
  Gpu g;
  RETURN_IF_ERROR(Cuda(cudaSetDevice(o.env.local_rank % 8), "cudaSetDevice"));
  RETURN_IF_ERROR(Cuda(cudaStreamCreate(&g.compute), "cudaStreamCreate"));
  RETURN_IF_ERROR(Cuda(cudaStreamCreate(&g.comm), "cudaStreamCreate"));
  g.bucket_ready.resize(static_cast<size_t>(o.buckets));
  for (cudaEvent_t& e : g.bucket_ready) {
    RETURN_IF_ERROR(Cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate"));
  }
  RETURN_IF_ERROR(
      Cuda(cudaEventCreateWithFlags(&g.reduced, cudaEventDisableTiming), "cudaEventCreate"));
  void* p = nullptr;
  RETURN_IF_ERROR(Cuda(cudaMalloc(&p, count * sizeof(float)), "cudaMalloc"));
  g.grads = static_cast<float*>(p);
  RETURN_IF_ERROR(Cuda(cudaMalloc(&p, sizeof(float)), "cudaMalloc"));
  g.loss = static_cast<float*>(p);
  RETURN_IF_ERROR(Cuda(cudaMalloc(&p, batch_bytes), "cudaMalloc"));
  g.batch = static_cast<char*>(p);
  RETURN_IF_ERROR(Cuda(cudaMalloc(&p, 16 * sizeof(int32_t)), "cudaMalloc"));
  g.gather_in = static_cast<int32_t*>(p);
  RETURN_IF_ERROR(Cuda(cudaMalloc(&p, 16 * sizeof(int32_t) * static_cast<size_t>(o.env.world_size)),
                       "cudaMalloc"));
  g.gather_out = static_cast<int32_t*>(p);
  RETURN_IF_ERROR(Cuda(cudaMalloc(&p, 1024 * sizeof(int32_t)), "cudaMalloc"));
  g.bcast = static_cast<int32_t*>(p);
  RegisterKernels();
  return g;
}

rs::Result<void> Train(const TrainerOptions& o) {
  const RankEnv& e = o.env;
  std::optional<DataLoader> loader;
  if (!o.data_dir.empty()) {
    ASSIGN_OR_RETURN(DataLoader d,
                     DataLoader::Open(o.data_dir + "/rank-" + std::to_string(e.rank) + ".bin",
                                      o.data_file_mb, o.direct_io));
    loader.emplace(std::move(d));
  }
  Compute compute = Compute::Calibrate();
  if (o.startup_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.startup_ms));
  if (o.parallel) {
    RETURN_IF_ERROR(Cuda(cudaSetDevice(o.env.local_rank % 8), "cudaSetDevice"));
    ASSIGN_OR_RETURN(ncclComm_t world, InitWorld(o));
    rs::Result<void> r = TrainParallel(o, world, compute, loader ? &*loader : nullptr);
    if (r.ok()) ncclCommDestroy(world);
    return r;
  }
  const size_t count = static_cast<size_t>(o.grad_mb * (1 << 20) / sizeof(float));
  const size_t batch_bytes = static_cast<size_t>(o.data_kb_per_step) * 1024;
  ASSIGN_OR_RETURN(Gpu g, SetUpGpu(o, count, batch_bytes));
  ASSIGN_OR_RETURN(ncclComm_t comm, InitWorld(o));
  if (o.warmup_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.warmup_ms));
  std::unique_ptr<FlightRecorder> fr;
  FrGroup world;  // the default group: the job's one communicator
  world.name = "0";
  world.desc = "default_pg";
  for (int r = 0; r < e.world_size; ++r) world.ranks.push_back(r);
  if ((fr = FlightRecorderFor(o))) fr->AddGroup(world);
  std::unique_ptr<Watchdog> watchdog;
  if (o.async) {
    FlightRecorder* f = fr.get();
    watchdog = std::make_unique<Watchdog>(std::vector<ncclComm_t>{comm}, e.rank, [f] {
      if (f != nullptr) f->DumpNow("the communicator reported an error: writing the dump");
    });
  }
  // The Flight Recorder's entry around each collective, as ProcessGroupNCCL keeps one.
  int64_t fr_seq = 0, fr_id = -1;
  auto fr_begin = [&](const char* name, size_t n, const char* dtype) {
    if (!fr) return;
    FrOp op;
    op.group = &world;
    op.collective_seq_id = op.op_id = ++fr_seq;  // PyTorch counts from 1
    op.profiling_name = name;
    op.input_sizes = op.output_sizes = {{static_cast<int64_t>(n)}};
    op.input_dtypes = op.output_dtypes = {dtype};
    op.frames = {{std::string(name).substr(5), "torch/distributed/distributed_c10d.py", 2696},
                 {"train_step", "rankscope-trainer", 1}};
    fr_id = fr->Begin(op, g.comm);
  };
  auto fr_end = [&] {
    if (fr) fr->End(fr_id, g.comm);
  };
  std::printf("rank %d/%d (node %d, local rank %d): ready, %s collectives, %.0f work units/ms\n",
              e.rank, e.world_size, e.group_rank, e.local_rank, o.async ? "async" : "sync",
              compute.units_per_ms());
  std::fflush(stdout);

  std::vector<float> grads(count);
  std::vector<char> batch(batch_bytes);
  std::vector<int32_t> gather_in(16), gather_out(16 * static_cast<size_t>(e.world_size));
  std::vector<int32_t> bcast(1024);
  const int w = e.world_size;
  // --cuda-graph: the AllReduces of every bucket, captured once on the communication stream.
  cudaGraphExec_t reduce_graph = nullptr;
  const auto start = Clock::now();
  for (int step = 0; step < o.steps; ++step) {
    if (step == o.crash_at_step) kill(getpid(), SIGKILL);
    auto t0 = Clock::now();
    if (loader) RETURN_IF_ERROR(loader->ReadNext(o.data_kb_per_step));
    double data_ms = MsSince(t0);
    if (step == o.hang_at_step) {
      std::fprintf(stderr, "rank %d: issuing nothing from step %d on\n", e.rank, step);
      for (;;) pause();
    }
    // Host preprocessing: the step's kernels cannot be issued before it is done.
    auto t1 = Clock::now();
    compute.Run(o.compute_ms * (1 - o.gpu_share));
    double host_ms = MsSince(t1);

    // Issue the step: nothing below waits for the device, except in sync mode.
    auto t2 = Clock::now();
    double nccl_ms = 0;
    const double factor = step >= o.slow_from_step ? o.slow_factor : 1.0;
    const double device_ns = o.compute_ms * o.gpu_share * factor * 1e6;
    const auto optimizer_ns = static_cast<uint64_t>(device_ns * 0.02);
    const double pass_ns = device_ns - static_cast<double>(optimizer_ns);
    RETURN_IF_ERROR(
        Cuda(cudaMemcpyAsync(g.batch, batch.data(), batch_bytes, cudaMemcpyHostToDevice, g.compute),
             "cudaMemcpyAsync"));
    for (int k = 0; k < 3; ++k) {
      RETURN_IF_ERROR(
          Cuda(LaunchForward(g.compute, static_cast<uint64_t>(pass_ns / 9)), "cudaLaunchKernel"));
    }
    // Backward produces the buckets last to first; each one's AllReduce goes to the
    // communication stream once its gradients are ready.
    const size_t per = (count + o.buckets - 1) / o.buckets;
    for (int b = o.buckets - 1; b >= 0; --b) {
      size_t first = std::min(count, per * static_cast<size_t>(b));
      size_t n = std::min(count, first + per) - first;
      RETURN_IF_ERROR(Cuda(LaunchBackward(g.compute, g.grads + first, first, n, e.rank, step,
                                          static_cast<uint64_t>(pass_ns * 2 / 3 / o.buckets)),
                           "cudaLaunchKernel"));
      RETURN_IF_ERROR(Cuda(cudaEventRecord(g.bucket_ready[b], g.compute), "cudaEventRecord"));
      RETURN_IF_ERROR(
          Cuda(cudaStreamWaitEvent(g.comm, g.bucket_ready[b], 0), "cudaStreamWaitEvent"));
      if (n == 0 || o.cuda_graph) continue;
      auto tn = Clock::now();
      fr_begin("nccl:all_reduce", n, "Float");
      RETURN_IF_ERROR(Nccl(
          comm,
          ncclAllReduce(g.grads + first, g.grads + first, n, ncclFloat32, ncclSum, comm, g.comm),
          "AllReduce", step));
      fr_end();
      nccl_ms += MsSince(tn);
    }
    if (o.cuda_graph) {  // every bucket is ready on the communication stream: replay them all
      auto tn = Clock::now();
      if (reduce_graph == nullptr) {
        RETURN_IF_ERROR(Cuda(cudaStreamBeginCapture(g.comm, cudaStreamCaptureModeGlobal),
                             "cudaStreamBeginCapture"));
        for (int b = o.buckets - 1; b >= 0; --b) {
          size_t first = std::min(count, per * static_cast<size_t>(b));
          size_t n = std::min(count, first + per) - first;
          if (n == 0) continue;
          RETURN_IF_ERROR(Nccl(comm,
                               ncclAllReduce(g.grads + first, g.grads + first, n, ncclFloat32,
                                             ncclSum, comm, g.comm),
                               "AllReduce", step));
        }
        cudaGraph_t graph = nullptr;
        RETURN_IF_ERROR(Cuda(cudaStreamEndCapture(g.comm, &graph), "cudaStreamEndCapture"));
        RETURN_IF_ERROR(
            Cuda(cudaGraphInstantiate(&reduce_graph, graph, 0), "cudaGraphInstantiate"));
        RETURN_IF_ERROR(Cuda(cudaGraphDestroy(graph), "cudaGraphDestroy"));
      }
      RETURN_IF_ERROR(Cuda(cudaGraphLaunch(reduce_graph, g.comm), "cudaGraphLaunch"));
      nccl_ms += MsSince(tn);
    }
    const bool gather = o.gather_every > 0 && step % o.gather_every == o.gather_every - 1;
    const bool broadcast = o.bcast_every > 0 && step % o.bcast_every == o.bcast_every - 1;
    if (gather) {
      gather_in.assign(gather_in.size(), e.rank * 1000 + step);
      RETURN_IF_ERROR(Cuda(cudaMemcpyAsync(g.gather_in, gather_in.data(), 16 * sizeof(int32_t),
                                           cudaMemcpyHostToDevice, g.comm),
                           "cudaMemcpyAsync"));
      auto tn = Clock::now();
      fr_begin("nccl:all_gather", 16, "Int");
      RETURN_IF_ERROR(Nccl(comm,
                           ncclAllGather(g.gather_in, g.gather_out, 16, ncclInt32, comm, g.comm),
                           "AllGather", step));
      fr_end();
      nccl_ms += MsSince(tn);
    }
    if (broadcast) {
      bcast.assign(bcast.size(), e.rank == 0 ? step : -1);
      RETURN_IF_ERROR(Cuda(cudaMemcpyAsync(g.bcast, bcast.data(), bcast.size() * sizeof(int32_t),
                                           cudaMemcpyHostToDevice, g.comm),
                           "cudaMemcpyAsync"));
      auto tn = Clock::now();
      fr_begin("nccl:broadcast", bcast.size(), "Int");
      RETURN_IF_ERROR(
          Nccl(comm, ncclBroadcast(g.bcast, g.bcast, bcast.size(), ncclInt32, 0, comm, g.comm),
               "Broadcast", step));
      fr_end();
      nccl_ms += MsSince(tn);
    }
    // The optimizer runs after the reduction; results come back for checking.
    RETURN_IF_ERROR(Cuda(cudaEventRecord(g.reduced, g.comm), "cudaEventRecord"));
    RETURN_IF_ERROR(Cuda(cudaStreamWaitEvent(g.compute, g.reduced, 0), "cudaStreamWaitEvent"));
    RETURN_IF_ERROR(
        Cuda(LaunchOptimizer(g.compute, g.loss, step, optimizer_ns), "cudaLaunchKernel"));
    RETURN_IF_ERROR(Cuda(cudaMemcpyAsync(grads.data(), g.grads, count * sizeof(float),
                                         cudaMemcpyDeviceToHost, g.compute),
                         "cudaMemcpyAsync"));
    if (gather) {
      RETURN_IF_ERROR(
          Cuda(cudaMemcpyAsync(gather_out.data(), g.gather_out, gather_out.size() * sizeof(int32_t),
                               cudaMemcpyDeviceToHost, g.compute),
               "cudaMemcpyAsync"));
    }
    if (broadcast) {
      RETURN_IF_ERROR(Cuda(cudaMemcpyAsync(bcast.data(), g.bcast, bcast.size() * sizeof(int32_t),
                                           cudaMemcpyDeviceToHost, g.compute),
                           "cudaMemcpyAsync"));
    }
    double issue_ms = MsSince(t2);
    // The step's sync point: the loss copied to the host (a blocking copy: it waits for the
    // compute stream, hence for the reduction).
    auto t3 = Clock::now();
    float loss = -1;
    RETURN_IF_ERROR(
        Cuda(cudaMemcpy(&loss, g.loss, sizeof(loss), cudaMemcpyDeviceToHost), "cudaMemcpy"));
    double sync_ms = MsSince(t3);
    if (loss != static_cast<float>(step)) {
      return rs::Error("loss of step " + std::to_string(step) + " is " + std::to_string(loss));
    }
    for (size_t i = 0; i < count; ++i) {
      float want = static_cast<float>(w * (w + 1) / 2 + w * static_cast<int>((step + i) % 3));
      if (grads[i] != want) {
        return rs::Error("AllReduce result mismatch at step " + std::to_string(step) + " element " +
                         std::to_string(i) + ": got " + std::to_string(grads[i]) + ", want " +
                         std::to_string(want));
      }
    }
    for (size_t i = 0; gather && i < gather_out.size(); ++i) {
      if (gather_out[i] != static_cast<int32_t>(i / gather_in.size()) * 1000 + step) {
        return rs::Error("AllGather result mismatch at step " + std::to_string(step));
      }
    }
    for (size_t i = 0; broadcast && i < bcast.size(); ++i) {
      if (bcast[i] != step) {
        return rs::Error("Broadcast result mismatch at step " + std::to_string(step));
      }
    }
    std::printf(
        "step %d data_ms=%.2f host_ms=%.2f issue_ms=%.2f nccl_ms=%.2f sync_ms=%.2f "
        "total_ms=%.2f\n",
        step, data_ms, host_ms, issue_ms, nccl_ms, sync_ms, MsSince(t0));
    std::fflush(stdout);
  }
  double seconds = MsSince(start) / 1000;
  std::printf("done: rank %d steps=%d seconds=%.3f steps_per_s=%.3f\n", e.rank, o.steps, seconds,
              o.steps / seconds);
  std::fflush(stdout);
  watchdog.reset();  // its callback uses the Flight Recorder
  fr.reset();
  if (reduce_graph != nullptr) cudaGraphExecDestroy(reduce_graph);  // before its communicator
  ncclCommDestroy(comm);
  return rs::Ok();
}

}  // namespace
}  // namespace trainer

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool help = false;
  auto opts = trainer::ParseOptions(args, std::getenv("RANKSCOPE_TRAINER_FAULTS"), &help);
  if (help) {
    std::fputs(trainer::Usage(), stdout);
    return 0;
  }
  if (!opts.ok()) {
    std::fprintf(stderr, "rankscope-trainer: %s\n", opts.error().message().c_str());
    return 2;
  }
  auto env = trainer::ReadRankEnv([](const char* n) -> const char* { return std::getenv(n); });
  if (!env.ok()) {
    std::fprintf(stderr, "rankscope-trainer: %s\n", env.error().message().c_str());
    return 2;
  }
  opts->env = *env;
  // Before the first CUDA or NCCL call (the CUDA runtime reads CUDA_LAUNCH_BLOCKING once, the
  // NCCL library its mode at every launch). Sync mode is a CPU framework: every kernel launch
  // and collective returns when its work is done.
  setenv("RANKSCOPE_TESTLIB_COLLECTIVES", opts->async ? "async" : "sync", 1);
  if (!opts->async) setenv("CUDA_LAUNCH_BLOCKING", "1", 1);
  auto r = trainer::Train(*opts);
  if (!r.ok()) {
    std::fprintf(stderr, "rankscope-trainer: rank %d: %s\n", env->rank,
                 r.error().message().c_str());
    return 1;
  }
  return 0;
}
