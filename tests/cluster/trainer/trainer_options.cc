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
  --gather-every N      AllGather every N steps, 0 = never (10)
  --bcast-every N       Broadcast every N steps, 0 = never (25)
  --rendezvous-timeout-s N   (60)
  --startup-ms N        wait before joining the job, like a framework's import time (0)
  --warmup-ms N         wait after the communicator is made, like building the model (0)
  --fr-dump-dir DIR     keep a PyTorch Flight Recorder of the collectives and write the rank's
                        dump DIR/nccl_trace_rank_R (pickle, schema 2.10) once none completed
                        for --fr-timeout-ms (off)
  --fr-timeout-ms N     (1500)
fault hooks (also from RANKSCOPE_TRAINER_FAULTS="name=value,..."):
  --slow-factor F       device kernels F times longer (a slower GPU; the host is not) ...
  --slow-from-step N    ... from step N on (0)
  --hang-at-step N      issue nothing from step N on (sleeps forever)
  --crash-at-step N     die at step N
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
          name != "crash-at-step") {
        return rs::Error("RANKSCOPE_TRAINER_FAULTS: unknown fault hook '" + name +
                         "' (slow-factor, slow-from-step, hang-at-step, crash-at-step)");
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
    } else if (name == "direct") {
      value = "1";
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
    } else if (name == "fr-timeout-ms") {
      RETURN_IF_ERROR(integer(&o.fr_timeout_ms, 100, 3600000));
    } else if (name == "data-kb-per-step") {
      RETURN_IF_ERROR(integer(&o.data_kb_per_step, 4, 1 << 20));
      if (o.data_kb_per_step % 4 != 0)
        return rs::Error("--data-kb-per-step must be a multiple of 4");
    } else if (name == "data-file-mb") {
      RETURN_IF_ERROR(integer(&o.data_file_mb, 1, 1 << 16));
    } else if (name == "direct") {
      o.direct_io = value != "0";
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
