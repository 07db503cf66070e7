#include "rscore/identity.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace rs {
namespace {

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

std::optional<int64_t> ToInt(std::string_view v) {
  if (v.empty() || v.size() > 18) return std::nullopt;
  int64_t out = 0;
  bool neg = false;
  size_t i = 0;
  if (v[0] == '-') {
    neg = true;
    i = 1;
    if (v.size() == 1) return std::nullopt;
  }
  for (; i < v.size(); ++i) {
    if (v[i] < '0' || v[i] > '9') return std::nullopt;
    out = out * 10 + (v[i] - '0');
  }
  return neg ? -out : out;
}

}  // namespace

std::optional<std::string> Config::Get(const std::string& key) const {
  auto it = values.find(key);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

Result<Config> ParseConfig(std::string_view text, const std::string& path) {
  Config cfg;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    std::string t = Trim(line);
    if (t.empty()) continue;
    size_t eq = t.find('=');
    if (eq == std::string::npos) {
      return Error(path + ":" + std::to_string(line_no) + ": expected 'key = value', got '" + t +
                   "'");
    }
    std::string key = Trim(std::string_view(t).substr(0, eq));
    std::string value = Trim(std::string_view(t).substr(eq + 1));
    if (key != "node") {
      return Error(path + ":" + std::to_string(line_no) + ": unknown key '" + key +
                   "' (known keys: node)");
    }
    cfg.values[key] = value;
  }
  return cfg;
}

Result<Config> LoadConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error(path + ": cannot read config file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseConfig(ss.str(), path);
}

Result<void> ValidateNodeName(std::string_view name, std::string_view source) {
  auto bad = [&](const std::string& why) {
    return Error("node name '" + std::string(name) + "' (from " + std::string(source) + ") " + why +
                 "; use 1-64 characters of letters, digits, '.', '_' or '-'");
  };
  if (name.empty()) return bad("is empty");
  if (name.size() > 64) return bad("is too long");
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return bad("contains '" + std::string(1, c) + "'");
  }
  return Ok();
}

Result<NodeName> ResolveNodeName(const NodeNameSources& s) {
  NodeName n;
  if (s.flag)
    n = {*s.flag, "flag"};
  else if (s.config)
    n = {*s.config, "config"};
  else if (s.env && !s.env->empty())
    n = {*s.env, "env"};
  else
    n = {s.hostname, "hostname"};
  std::string where = n.source == "flag"     ? "--node"
                      : n.source == "config" ? "the config file"
                      : n.source == "env"    ? "RANKSCOPE_NODE"
                                             : "the hostname";
  RETURN_IF_ERROR(ValidateNodeName(n.name, where));
  return n;
}

bool RankEnv::any() const {
  return rank || local_rank || world_size || local_world_size || group_rank || role_rank ||
         torchelastic_run_id || slurm_procid || slurm_localid || slurm_nodeid || slurm_job_id;
}

std::optional<int64_t> RankEnv::global_rank() const { return rank ? rank : slurm_procid; }

RankEnv ParseRankEnv(std::string_view block) {
  RankEnv env;
  size_t pos = 0;
  while (pos < block.size()) {
    size_t end = block.find('\0', pos);
    if (end == std::string_view::npos) end = block.size();
    std::string_view kv = block.substr(pos, end - pos);
    pos = end + 1;
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "RANK")
      env.rank = ToInt(v);
    else if (k == "LOCAL_RANK")
      env.local_rank = ToInt(v);
    else if (k == "WORLD_SIZE")
      env.world_size = ToInt(v);
    else if (k == "LOCAL_WORLD_SIZE")
      env.local_world_size = ToInt(v);
    else if (k == "GROUP_RANK")
      env.group_rank = ToInt(v);
    else if (k == "ROLE_RANK")
      env.role_rank = ToInt(v);
    else if (k == "TORCHELASTIC_RUN_ID")
      env.torchelastic_run_id = std::string(v);
    else if (k == "SLURM_PROCID")
      env.slurm_procid = ToInt(v);
    else if (k == "SLURM_LOCALID")
      env.slurm_localid = ToInt(v);
    else if (k == "SLURM_NODEID")
      env.slurm_nodeid = ToInt(v);
    else if (k == "SLURM_JOB_ID")
      env.slurm_job_id = std::string(v);
    else if (k == "CUDA_LAUNCH_BLOCKING")
      env.cuda_launch_blocking = v == "1" ? 1 : 0;
  }
  return env;
}

Result<RankEnv> ReadRankEnv(const std::string& proc_root, int pid) {
  std::string path = proc_root + "/" + std::to_string(pid) + "/environ";
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(path + ": cannot read (process gone or no permission)");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseRankEnv(ss.str());
}

}  // namespace rs
