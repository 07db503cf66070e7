// Node identity and per-process rank information.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "rscore/result.h"

namespace rs {

// A small "key = value" config file ('#' starts a comment). Known keys: node.
struct Config {
  std::map<std::string, std::string> values;
  std::optional<std::string> Get(const std::string& key) const;
};
Result<Config> LoadConfig(const std::string& path);
Result<Config> ParseConfig(std::string_view text, const std::string& path_for_errors);

struct NodeNameSources {
  std::optional<std::string> flag;    // --node
  std::optional<std::string> config;  // config file 'node'
  std::optional<std::string> env;     // RANKSCOPE_NODE
  std::string hostname;
};
struct NodeName {
  std::string name;
  std::string source;  // 'flag' | 'config' | 'env' | 'hostname'
};
// Precedence: flag, config, env, hostname. Names are 1..64 of [A-Za-z0-9._-].
Result<NodeName> ResolveNodeName(const NodeNameSources& sources);
Result<void> ValidateNodeName(std::string_view name, std::string_view source);

// Rank variables from a traced process's environment. Only these are ever stored.
struct RankEnv {
  std::optional<int64_t> rank, local_rank, world_size, local_world_size, group_rank, role_rank;
  std::optional<std::string> torchelastic_run_id;
  std::optional<int64_t> slurm_procid, slurm_localid, slurm_nodeid;
  std::optional<std::string> slurm_job_id;
  // CUDA_LAUNCH_BLOCKING: 1 when it is "1" (every kernel launch, NCCL's included, returns when
  // the kernel is done: the process's NCCL calls block), 0 when set to anything else. Not a
  // rank variable: any() ignores it.
  std::optional<int64_t> cuda_launch_blocking;
  bool any() const;
  // RANK, else SLURM_PROCID.
  std::optional<int64_t> global_rank() const;
};
// Parses a NUL-separated environment block (as in /proc/PID/environ).
RankEnv ParseRankEnv(std::string_view environ_block);
// Reads <proc_root>/<pid>/environ.
Result<RankEnv> ReadRankEnv(const std::string& proc_root, int pid);

}  // namespace rs
