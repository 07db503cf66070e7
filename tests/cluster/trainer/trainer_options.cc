#include "trainer_options.h"

#include <cstdlib>
#include <sstream>

namespace trainer {
namespace {

rs::Result<double> ParseDouble(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') {
    return rs::Error("--" + flag + ": '" + text + "' is not a number");
  }
  return v;
}

rs::Result<int> ParseInt(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < -1000000000 || v > 1000000000) {
    return rs::Error("--" + flag + ": '" + text + "' is not an integer");
  }
  return static_cast<int>(v);
}

}  // namespace

const char* FaultPointName(FaultPoint p) {
  switch (p) {
    case FaultPoint::kStep:
      return "step";
    case FaultPoint::kTp:
      return "tp";
    case FaultPoint::kPp:
      return "pp";
    case FaultPoint::kDp:
      return "dp";
    case FaultPoint::kEp:
      return "ep";
  }
  return "?";
}

const char* MismatchName(Mismatch m) {
  switch (m) {
    case Mismatch::kNone:
      return "none";
    case Mismatch::kSize:
      return "size";
    case Mismatch::kDtype:
      return "dtype";
    case Mismatch::kOp:
      return "op";
  }
  return "?";
}

const char* Usage() {
  return R"(usage: rankscope-trainer [options]
A data-parallel training loop (like PyTorch DDP) on the test bed's CUDA runtime and collective
library. Per step: data loading and preprocessing on the host, forward and backward kernels on
a compute stream, each gradient bucket's AllReduce on a communication stream as backward
proceeds, optimizer kernels after the reduction, and the loss copied to the host (the step's
sync point). Rank identity comes from torchrun's variables: RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT (rank 0 creates the ncclUniqueId and
serves it at MASTER_ADDR:MASTER_PORT); the device is LOCAL_RANK.
  --collectives MODE    async (collectives and kernels run later on the device, the host
                        blocks at the step's end: a GPU job) or sync (every kernel and
                        collective blocks the host: a CPU framework such as gloo) (async)
  --steps N             steps to run (50)
  --grad-mb F           gradient size per step in MiB of float32 (1)
  --buckets N           gradient buckets, one AllReduce each (1)
  --compute-ms F        compute time per step (30)
  --gpu-share F         share of compute that is device time; the rest is host CPU work
                        (data preprocessing) before the step's kernels are issued (0.8)
  --data-dir DIR        read training data from DIR/rank-R.bin (created if missing)
  --data-kb-per-step N  KiB read per step, a multiple of 4 (256)
  --data-file-mb N      size of the data file (16)
  --direct              read with O_DIRECT
  --cuda-graph          capture the step's gradient AllReduces into a CUDA graph at step 0 and
                        replay it every step (async collectives; not with --parallel or the
                        Flight Recorder flags): NCCL is called once per bucket, ever
  --nonblocking         non-blocking communicators (ncclConfig_t.blocking = 0, as PyTorch's
                        TORCH_NCCL_USE_COMM_NONBLOCKING=1): NCCL calls return ncclInProgress
                        and are polled with ncclCommGetAsyncError until done (off)
  --gather-every N      AllGather every N steps, 0 = never (10)
  --bcast-every N       Broadcast every N steps, 0 = never (25)
  --rendezvous-timeout-s N   (60)
  --startup-ms N        wait before joining the job, like a framework's import time (0)
  --warmup-ms N         wait after the communicator is made, like building the model (0)
  --fr-dump-dir DIR     keep a PyTorch Flight Recorder of the collectives and write the rank's
                        dump DIR/nccl_trace_rank_R (pickle, schema 2.10) once none completed
                        for --fr-timeout-ms (off)
  --fr-timeout-ms N     (1500)
  --fr-json-dir DIR     also write the dump as JSON, DIR/nccl_trace_rank_R.json (off)
  --fr-timing           TORCH_NCCL_ENABLE_TIMING: a start event per operation, so that entries
                        become 'started' and completed ones carry duration_ms (off, as PyTorch)
  --fr-buffer-size N    TORCH_FR_BUFFER_SIZE: entries kept, the oldest dropped first (2000)
  --fr-pipe STEM        TORCH_NCCL_DEBUG_INFO_PIPE_FILE: make the named pipe STEM<rank>.pipe
                        and write the dump whenever something is written into it, the job
                        running on (off)
multi-group job, shaped like Megatron-LM (tests/cluster/README.md):
  --parallel tp=T,pp=P,dp=D[,ep=E]   process groups split from the world communicator
                        (ncclCommSplit), ranks laid out tp fastest, then dp, then pp;
                        per step a 1F1B pipeline of micro-batches: tensor-parallel all-reduces
                        in every layer, expert-parallel all-to-alls with ep > 1, send/recv
                        between stages, data-parallel reduce-scatter and all-gather at the end
  --microbatches N      micro-batches per step (4)
  --layers N            transformer layers per pipeline stage (2)
  --act-kb F            one micro-batch's activation, KiB of bfloat16 (32)
  --no-batch-p2p-sync   do not synchronize the device after each pipeline exchange
fault hooks (also from RANKSCOPE_TRAINER_FAULTS="name=value,..."):
  --slow-factor F       device kernels F times longer (a slower GPU; the host is not) ...
  --slow-from-step N    ... from step N on (0)
  --hang-at-step N      issue nothing from step N on (sleeps forever)
  --crash-at-step N     die at step N
  --fault-in WHERE      with --parallel: a hang, crash or mismatch strikes at the step's start
                        (step) or just before the rank's first operation of the step in its
                        tp, pp, dp or ep group (step)
  --mismatch KIND       issue one collective with another size (half the count), dtype
                        (float32 instead of bfloat16) or op (max instead of sum) ...
  --mismatch-at-step N  ... at step N: the rank's first operation of that step in its
                        --fault-in group
)";
}

rs::Result<TrainerOptions> ParseOptions(const std::vector<std::string>& argv,
                                        const char* faults_env, bool* help) {
  *help = false;
  // Normalize to (name, value) pairs: env entries first, so flags win.
  std::vector<std::pair<std::string, std::string>> pairs;
  if (faults_env != nullptr && *faults_env != '\0') {
    std::stringstream ss(faults_env);
    std::string item;
    while (std::getline(ss, item, ',')) {
      size_t eq = item.find('=');
      if (eq == std::string::npos) {
        return rs::Error("RANKSCOPE_TRAINER_FAULTS: '" + item + "' is not name=value");
      }
      std::string name = item.substr(0, eq);
      if (name != "slow-factor" && name != "slow-from-step" && name != "hang-at-step" &&
          name != "crash-at-step" && name != "fault-in" && name != "mismatch" &&
          name != "mismatch-at-step") {
        return rs::Error(
            "RANKSCOPE_TRAINER_FAULTS: unknown fault hook '" + name +
            "' (slow-factor, slow-from-step, hang-at-step, crash-at-step, fault-in, mismatch, "
            "mismatch-at-step)");
      }
      pairs.push_back({name, item.substr(eq + 1)});
    }
  }
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--help" || a == "-h") {
      *help = true;
      return TrainerOptions{};
    }
    if (a.rfind("--", 0) != 0) return rs::Error("unexpected argument '" + a + "' (see --help)");
    std::string name = a.substr(2);
    std::string value;
    size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (name == "direct" || name == "fr-timing" || name == "cuda-graph" ||
               name == "nonblocking") {
      value = "1";
    } else if (name == "no-batch-p2p-sync") {
      name = "batch-p2p-sync";
      value = "0";
    } else {
      if (i + 1 >= argv.size()) return rs::Error("--" + name + " needs a value");
      value = argv[++i];
    }
    pairs.push_back({name, value});
  }
  TrainerOptions o;
  for (const auto& [name, value] : pairs) {
    auto dbl = [&](double* field, double min, double max) -> rs::Result<void> {
      ASSIGN_OR_RETURN(double v, ParseDouble(name, value));
      if (v < min || v > max) {
        return rs::Error("--" + name + " " + value + " is out of range [" + std::to_string(min) +
                         ", " + std::to_string(max) + "]");
      }
      *field = v;
      return rs::Ok();
    };
    auto integer = [&](int* field, int min, int max) -> rs::Result<void> {
      ASSIGN_OR_RETURN(int v, ParseInt(name, value));
      if (v < min || v > max) {
        return rs::Error("--" + name + " " + value + " is out of range [" + std::to_string(min) +
                         ", " + std::to_string(max) + "]");
      }
      *field = v;
      return rs::Ok();
    };
    if (name == "collectives") {
      if (value != "async" && value != "sync") {
        return rs::Error("--collectives '" + value + "': use async or sync");
      }
      o.async = value == "async";
    } else if (name == "buckets") {
      RETURN_IF_ERROR(integer(&o.buckets, 1, 64));
    } else if (name == "steps") {
      RETURN_IF_ERROR(integer(&o.steps, 1, 100000000));
    } else if (name == "grad-mb") {
      RETURN_IF_ERROR(dbl(&o.grad_mb, 0.0, 4096.0));
    } else if (name == "compute-ms") {
      RETURN_IF_ERROR(dbl(&o.compute_ms, 0.0, 600000.0));
    } else if (name == "gpu-share") {
      RETURN_IF_ERROR(dbl(&o.gpu_share, 0.0, 1.0));
    } else if (name == "data-dir") {
      o.data_dir = value;
    } else if (name == "fr-dump-dir") {
      o.fr_dump_dir = value;
    } else if (name == "fr-json-dir") {
      o.fr_json_dir = value;
    } else if (name == "fr-timeout-ms") {
      RETURN_IF_ERROR(integer(&o.fr_timeout_ms, 100, 3600000));
    } else if (name == "fr-timing") {
      o.fr_timing = value != "0";
    } else if (name == "fr-pipe") {
      o.fr_pipe_stem = value;
    } else if (name == "fr-buffer-size") {
      // PyTorch's default ring is 2000 entries; a million bounds the dump's memory.
      RETURN_IF_ERROR(integer(&o.fr_buffer_size, 1, 1000000));
    } else if (name == "parallel") {
      ASSIGN_OR_RETURN(o.parallel, ParseParallel(value));
    } else if (name == "microbatches") {
      RETURN_IF_ERROR(integer(&o.microbatches, 1, 1024));
    } else if (name == "layers") {
      RETURN_IF_ERROR(integer(&o.layers, 1, 1024));
    } else if (name == "act-kb") {
      // A 64 MiB bound keeps a test bed rank's buffers (a few activations per micro-batch)
      // well inside one machine's memory.
      RETURN_IF_ERROR(dbl(&o.act_kb, 1.0, 65536.0));
    } else if (name == "batch-p2p-sync") {
      o.batch_p2p_sync = value != "0";
    } else if (name == "fault-in") {
      bool found = false;
      for (FaultPoint p : {FaultPoint::kStep, FaultPoint::kTp, FaultPoint::kPp, FaultPoint::kDp,
                           FaultPoint::kEp}) {
        if (value == FaultPointName(p)) {
          o.fault_in = p;
          found = true;
        }
      }
      if (!found) return rs::Error("--fault-in '" + value + "': use step, tp, pp, dp or ep");
    } else if (name == "mismatch") {
      bool found = false;
      for (Mismatch m : {Mismatch::kNone, Mismatch::kSize, Mismatch::kDtype, Mismatch::kOp}) {
        if (value == MismatchName(m)) {
          o.mismatch = m;
          found = true;
        }
      }
      if (!found) return rs::Error("--mismatch '" + value + "': use size, dtype or op");
    } else if (name == "mismatch-at-step") {
      RETURN_IF_ERROR(integer(&o.mismatch_at_step, -1, 1 << 30));
    } else if (name == "data-kb-per-step") {
      RETURN_IF_ERROR(integer(&o.data_kb_per_step, 4, 1 << 20));
      if (o.data_kb_per_step % 4 != 0)
        return rs::Error("--data-kb-per-step must be a multiple of 4");
    } else if (name == "data-file-mb") {
      RETURN_IF_ERROR(integer(&o.data_file_mb, 1, 1 << 16));
    } else if (name == "direct") {
      o.direct_io = value != "0";
    } else if (name == "cuda-graph") {
      o.cuda_graph = value != "0";
    } else if (name == "nonblocking") {
      o.nonblocking = value != "0";
    } else if (name == "gather-every") {
      RETURN_IF_ERROR(integer(&o.gather_every, 0, 1 << 30));
    } else if (name == "bcast-every") {
      RETURN_IF_ERROR(integer(&o.bcast_every, 0, 1 << 30));
    } else if (name == "rendezvous-timeout-s") {
      RETURN_IF_ERROR(integer(&o.rendezvous_timeout_s, 1, 86400));
    } else if (name == "startup-ms") {
      RETURN_IF_ERROR(integer(&o.startup_ms, 0, 600000));
    } else if (name == "warmup-ms") {
      RETURN_IF_ERROR(integer(&o.warmup_ms, 0, 600000));
    } else if (name == "slow-factor") {
      RETURN_IF_ERROR(dbl(&o.slow_factor, 0.0, 1000.0));
    } else if (name == "slow-from-step") {
      RETURN_IF_ERROR(integer(&o.slow_from_step, 0, 1 << 30));
    } else if (name == "hang-at-step") {
      RETURN_IF_ERROR(integer(&o.hang_at_step, -1, 1 << 30));
    } else if (name == "crash-at-step") {
      RETURN_IF_ERROR(integer(&o.crash_at_step, -1, 1 << 30));
    } else {
      return rs::Error("unknown flag --" + name + " (see --help)");
    }
  }
  if (o.data_kb_per_step > o.data_file_mb * 1024) {
    return rs::Error("--data-kb-per-step is larger than --data-file-mb");
  }
  if (!o.parallel && (o.fault_in != FaultPoint::kStep || o.mismatch != Mismatch::kNone)) {
    return rs::Error("--fault-in and --mismatch need a multi-group job (--parallel)");
  }
  if (o.cuda_graph && (!o.async || o.parallel || !o.fr_dump_dir.empty())) {
    return rs::Error(
        "--cuda-graph needs --collectives async and a DDP job without the Flight Recorder "
        "(no --parallel, no --fr-dump-dir)");
  }
  if ((o.mismatch != Mismatch::kNone) != (o.mismatch_at_step >= 0)) {
    return rs::Error("--mismatch and --mismatch-at-step go together");
  }
  if (o.mismatch != Mismatch::kNone && o.fault_in == FaultPoint::kStep) {
    return rs::Error("--mismatch needs --fault-in tp, pp, dp or ep (the group of the collective)");
  }
  if (o.mismatch == Mismatch::kOp &&
      (o.fault_in == FaultPoint::kPp || o.fault_in == FaultPoint::kEp)) {
    return rs::Error(std::string("--mismatch op --fault-in ") + FaultPointName(o.fault_in) +
                     ": send/recv and all-to-all have no reduction op (use size or dtype)");
  }
  return o;
}

rs::Result<RankEnv> ReadRankEnv(const char* (*get)(const char*)) {
  RankEnv e;
  auto read_int = [&](const char* name, int* out, int min) -> rs::Result<void> {
    const char* v = get(name);
    if (v == nullptr) return rs::Ok();
    char* end = nullptr;
    long x = std::strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || x < min || x > 1000000) {
      return rs::Error(std::string("environment variable ") + name + "='" + v +
                       "' is not a valid number");
    }
    *out = static_cast<int>(x);
    return rs::Ok();
  };
  RETURN_IF_ERROR(read_int("RANK", &e.rank, 0));
  RETURN_IF_ERROR(read_int("WORLD_SIZE", &e.world_size, 1));
  e.local_rank = e.rank;
  e.local_world_size = e.world_size;
  RETURN_IF_ERROR(read_int("LOCAL_RANK", &e.local_rank, 0));
  RETURN_IF_ERROR(read_int("LOCAL_WORLD_SIZE", &e.local_world_size, 1));
  RETURN_IF_ERROR(read_int("GROUP_RANK", &e.group_rank, 0));
  RETURN_IF_ERROR(read_int("MASTER_PORT", &e.master_port, 1));
  if (const char* a = get("MASTER_ADDR")) e.master_addr = a;
  if (e.rank >= e.world_size) {
    return rs::Error("RANK=" + std::to_string(e.rank) +
                     " is not below WORLD_SIZE=" + std::to_string(e.world_size));
  }
  return e;
}

}  // namespace trainer
