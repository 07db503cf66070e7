// rankscope-trainer: one rank of a simulated data-parallel training job on the test bed.
// Each step: data loading -> compute -> gradient AllReduce (verified) -> an occasional
// AllGather / Broadcast. Prints one line per step and a summary with steps/s.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "rendezvous.h"
#include "trainer_options.h"
#include "workload.h"

namespace trainer {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

rs::Result<void> Nccl(ncclResult_t r, const char* what, int step) {
  if (r == ncclSuccess) return rs::Ok();
  return rs::Error(std::string(what) + " failed at step " + std::to_string(step) + ": " +
                   ncclGetErrorString(r) + " (a peer rank died or the network failed)");
}

// Gradient element i of `rank` at `step`: small integers, so the float sum is exact.
float Grad(int rank, int step, size_t i) {
  return static_cast<float>(rank + 1 + static_cast<int>((static_cast<size_t>(step) + i) % 3));
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
  ncclResult_t r = ncclCommInitRank(&comm, e.world_size, id, e.rank);
  if (r != ncclSuccess) {
    return rs::Error(std::string("ncclCommInitRank failed: ") + ncclGetErrorString(r));
  }
  return comm;
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
  ASSIGN_OR_RETURN(ncclComm_t comm, InitWorld(o));
  std::printf("rank %d/%d (node %d, local rank %d): ready, %.0f work units/ms\n", e.rank,
              e.world_size, e.group_rank, e.local_rank, compute.units_per_ms());
  std::fflush(stdout);

  const size_t count = static_cast<size_t>(o.grad_mb * (1 << 20) / sizeof(float));
  std::vector<float> grads(count);
  std::vector<int32_t> gather_in(16), gather_out(16 * static_cast<size_t>(e.world_size));
  std::vector<int32_t> bcast(1024);
  const auto start = Clock::now();
  for (int step = 0; step < o.steps; ++step) {
    if (step == o.crash_at_step) kill(getpid(), SIGKILL);
    auto t0 = Clock::now();
    if (loader) RETURN_IF_ERROR(loader->ReadNext(o.data_kb_per_step));
    double data_ms = MsSince(t0);

    auto t1 = Clock::now();
    double factor = step >= o.slow_from_step ? o.slow_factor : 1.0;
    for (size_t i = 0; i < count; ++i) grads[i] = Grad(e.rank, step, i);
    double fill_ms = MsSince(t1);
    double cpu_ms = std::max(0.0, o.compute_ms * (1 - o.gpu_share) - fill_ms);
    // A slow rank models a slower GPU: its "GPU time" stretches, its CPU work does not.
    compute.Run(cpu_ms, o.compute_ms * o.gpu_share * factor);
    double compute_ms = MsSince(t1);

    if (step == o.hang_at_step) {
      std::fprintf(stderr, "rank %d: not entering the collectives of step %d\n", e.rank, step);
      for (;;) pause();
    }
    auto t2 = Clock::now();
    RETURN_IF_ERROR(
        Nccl(ncclAllReduce(grads.data(), grads.data(), count, ncclFloat32, ncclSum, comm, nullptr),
             "AllReduce", step));
    double allreduce_ms = MsSince(t2);
    const int w = e.world_size;
    for (size_t i = 0; i < count; ++i) {
      float want = static_cast<float>(w * (w + 1) / 2 + w * static_cast<int>((step + i) % 3));
      if (grads[i] != want) {
        return rs::Error("AllReduce result mismatch at step " + std::to_string(step) + " element " +
                         std::to_string(i) + ": got " + std::to_string(grads[i]) + ", want " +
                         std::to_string(want));
      }
    }
    if (o.gather_every > 0 && step % o.gather_every == o.gather_every - 1) {
      for (size_t i = 0; i < gather_in.size(); ++i) gather_in[i] = e.rank * 1000 + step;
      RETURN_IF_ERROR(Nccl(ncclAllGather(gather_in.data(), gather_out.data(), gather_in.size(),
                                         ncclInt32, comm, nullptr),
                           "AllGather", step));
      for (size_t i = 0; i < gather_out.size(); ++i) {
        if (gather_out[i] != static_cast<int32_t>(i / gather_in.size()) * 1000 + step) {
          return rs::Error("AllGather result mismatch at step " + std::to_string(step));
        }
      }
    }
    if (o.bcast_every > 0 && step % o.bcast_every == o.bcast_every - 1) {
      bcast.assign(bcast.size(), e.rank == 0 ? step : -1);
      RETURN_IF_ERROR(
          Nccl(ncclBroadcast(bcast.data(), bcast.data(), bcast.size(), ncclInt32, 0, comm, nullptr),
               "Broadcast", step));
      for (int32_t v : bcast) {
        if (v != step)
          return rs::Error("Broadcast result mismatch at step " + std::to_string(step));
      }
    }
    std::printf("step %d data_ms=%.2f compute_ms=%.2f allreduce_ms=%.2f total_ms=%.2f\n", step,
                data_ms, compute_ms, allreduce_ms, MsSince(t0));
    std::fflush(stdout);
  }
  double seconds = MsSince(start) / 1000;
  std::printf("done: rank %d steps=%d seconds=%.3f steps_per_s=%.3f\n", e.rank, o.steps, seconds,
              o.steps / seconds);
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
  auto r = trainer::Train(*opts);
  if (!r.ok()) {
    std::fprintf(stderr, "rankscope-trainer: rank %d: %s\n", env->rank,
                 r.error().message().c_str());
    return 1;
  }
  return 0;
}
