// Options of rankscope-trainer: the workload from flags, the rank identity from torchrun's
// environment, and fault hooks from flags or RANKSCOPE_TRAINER_FAULTS (a comma-separated
// list of the same flags without dashes, e.g. "slow-factor=3,slow-from-step=10"). The
// recorder never stores command lines or that variable, so faults stay invisible to it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "parallel_layout.h"
#include "rscore/result.h"

namespace trainer {

struct RankEnv {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int group_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};

// Where a fault of a multi-group job (--parallel) strikes within its step: at the step's start,
// or just before the rank's first operation of the step in one of its process groups.
enum class FaultPoint { kStep, kTp, kPp, kDp, kEp };
const char* FaultPointName(FaultPoint p);
// A collective issued differently from the rest of its group (--mismatch).
enum class Mismatch { kNone, kSize, kDtype, kOp };
const char* MismatchName(Mismatch m);

struct TrainerOptions {
  // async: collectives enqueued on CUDA streams, the host blocks only at the step's end (a GPU
  // job); sync: every kernel and collective blocks the host (a CPU framework such as gloo).
  bool async = true;
  int steps = 50;
  int buckets = 1;             // gradient buckets: one AllReduce each, issued during backward
  double grad_mb = 1.0;        // AllReduce size per step (float32), MiB
  double compute_ms = 30.0;    // per step
  double gpu_share = 0.8;      // share of compute_ms that is device time (the rest: host CPU)
  std::string data_dir;        // empty: no data loading
  int data_kb_per_step = 256;  // read per step (multiple of 4 KiB)
  int data_file_mb = 16;       // size of this rank's data file
  bool direct_io = false;      // O_DIRECT reads
  // The gradient AllReduces captured into a CUDA graph at the first step and replayed at every
  // step (async DDP only): NCCL is called once per bucket, ever.
  bool cuda_graph = false;
  // Non-blocking communicators (ncclConfig_t.blocking = 0): every NCCL call that returns
  // ncclInProgress is polled until done (nonblocking.h), as PyTorch does.
  bool nonblocking = false;
  int gather_every = 10;  // AllGather every N steps (0: never)
  int bcast_every = 25;   // Broadcast every N steps (0: never)
  int rendezvous_timeout_s = 60;
  int startup_ms = 0;       // sleep before the NCCL init (a framework's import time)
  int warmup_ms = 0;        // sleep after it, before the first step (building the model)
  std::string fr_dump_dir;  // non-empty: a Flight Recorder dump on a stall (flight_recorder.h)
  std::string fr_json_dir;  // non-empty: the same dump as JSON there too
  int fr_timeout_ms = 1500;
  bool fr_timing = false;     // TORCH_NCCL_ENABLE_TIMING: start events, started states, durations
  int fr_buffer_size = 2000;  // TORCH_FR_BUFFER_SIZE: entries kept (a ring)
  std::string fr_pipe_stem;   // TORCH_NCCL_DEBUG_INFO_PIPE_FILE: dumps on request (off)
  // A multi-group job shaped like Megatron-LM (parallel_trainer.h); unset: DDP.
  std::optional<ParallelSpec> parallel;
  int microbatches = 4;  // per step and pipeline (1F1B)
  int layers = 2;        // transformer layers per pipeline stage
  double act_kb = 32;    // one microbatch's activation (bfloat16), KiB
  bool batch_p2p_sync =
      true;  // Megatron's batch_p2p_sync: the device synchronized after each exchange
  // Fault hooks.
  double slow_factor = 1.0;                 // the device's kernels take this many times longer ...
  int slow_from_step = 0;                   // ... from this step on
  int hang_at_step = -1;                    // stop issuing work at this step (sleep forever)
  int crash_at_step = -1;                   // die (SIGKILL to itself) at this step
  FaultPoint fault_in = FaultPoint::kStep;  // where in the step a hang, crash or mismatch strikes
  Mismatch mismatch = Mismatch::kNone;      // issue one collective with another size, type or op
  int mismatch_at_step = -1;                // ... at this step
  RankEnv env;
};

// Parses argv (without argv[0]) after the entries of RANKSCOPE_TRAINER_FAULTS; every error
// names the flag. `help` is set for --help.
rs::Result<TrainerOptions> ParseOptions(const std::vector<std::string>& args,
                                        const char* faults_env, bool* help);
// Reads RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT
// through getenv-like lookup.
rs::Result<RankEnv> ReadRankEnv(const char* (*get)(const char*));
const char* Usage();

}  // namespace trainer
