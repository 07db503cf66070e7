#include "recorder/process_table.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rs::rec {
namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string ReadLink(const std::string& path) {
  char buf[4096];
  ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

std::optional<uint64_t> ReadNetnsInode(const std::string& proc_root, int pid) {
  std::string link = ReadLink(proc_root + "/" + std::to_string(pid) + "/ns/net");
  // "net:[4026531840]"
  size_t open = link.find('[');
  size_t close = link.find(']');
  if (link.rfind("net:", 0) != 0 || open == std::string::npos || close == std::string::npos ||
      close <= open + 1) {
    return std::nullopt;
  }
  try {
    return std::stoull(link.substr(open + 1, close - open - 1));
  } catch (...) {
    return std::nullopt;
  }
}

void ResolveRank(ProcessInfo& p) {
  std::optional<int64_t> env_rank = p.env.global_rank();
  p.rank_conflict.clear();
  if (env_rank && p.nccl_rank && *env_rank != *p.nccl_rank) {
    std::string env_name = p.env.rank ? "RANK" : "SLURM_PROCID";
    p.rank_conflict = "environment " + env_name + "=" + std::to_string(*env_rank) +
                      " but ncclCommInitRank rank=" + std::to_string(*p.nccl_rank);
    p.rank.reset();
    return;
  }
  p.rank = env_rank ? env_rank : p.nccl_rank;
}

ProcessTable::ProcessTable(rs::Db* db, std::string node, std::string proc_root,
                           uint64_t scope_netns, std::function<int64_t()> now_ns)
    : db_(db),
      node_(std::move(node)),
      proc_root_(std::move(proc_root)),
      scope_netns_(scope_netns),
      now_ns_(std::move(now_ns)) {}

rs::Result<bool> ProcessTable::Trace(int pid) {
  if (IsTraced(pid)) return false;
  std::string dir = proc_root_ + "/" + std::to_string(pid);
  if (access(dir.c_str(), F_OK) != 0) {
    return rs::Error("pid " + std::to_string(pid) + ": no such process (" + dir +
                     " does not exist); check the --pid value");
  }
  ProcessInfo p;
  p.pid = pid;
  p.first_seen_ns = now_ns_ ? now_ns_() : 0;
  p.comm = ReadFirstLine(dir + "/comm");
  p.exe = ReadLink(dir + "/exe");
  p.netns = ReadNetnsInode(proc_root_, pid);
  if (scope_netns_ != 0 && p.netns != scope_netns_) {
    return rs::Error("pid " + std::to_string(pid) + " (" + p.comm +
                     ") is in another network namespace; --scope netns records only the "
                     "recorder's own (use --scope host to trace it)");
  }
  auto env = rs::ReadRankEnv(proc_root_, pid);
  if (env.ok()) p.env = *env;  // unreadable environ (a kernel thread): no rank variables
  ResolveRank(p);
  RETURN_IF_ERROR(Write(p));
  procs_[pid] = std::move(p);
  newly_traced_.push_back(pid);
  return true;
}

rs::Result<void> ProcessTable::SetNcclRank(int pid, int64_t rank, int64_t nranks) {
  if (!IsTraced(pid)) RETURN_IF_ERROR(Trace(pid));
  ProcessInfo& p = procs_[pid];
  if (p.nccl_rank) return rs::Ok();  // the first communicator defines the process's rank
  p.nccl_rank = rank;
  p.nccl_nranks = nranks;
  ResolveRank(p);
  return Write(p);
}

rs::Result<void> ProcessTable::SetNcclProfilerApi(int pid, int64_t api_version) {
  if (!IsTraced(pid)) RETURN_IF_ERROR(Trace(pid));
  ProcessInfo& p = procs_[pid];
  if (p.nccl_profiler_api == api_version) return rs::Ok();
  p.nccl_profiler_api = api_version;
  return Write(p);
}

const ProcessInfo* ProcessTable::Find(int pid) const {
  auto it = procs_.find(pid);
  return it == procs_.end() ? nullptr : &it->second;
}

std::vector<int> ProcessTable::TracedPids() const {
  std::vector<int> out;
  for (const auto& [pid, _] : procs_) out.push_back(pid);
  return out;
}

std::vector<int> ProcessTable::TakeNewlyTraced() {
  std::vector<int> out;
  out.swap(newly_traced_);
  return out;
}

rs::Result<void> ProcessTable::Write(const ProcessInfo& p) {
  if (db_ == nullptr) return rs::Ok();
  ASSIGN_OR_RETURN(rs::Statement st,
                   db_->Prepare("INSERT OR REPLACE INTO processes(node, pid, first_seen_ns, "
                                "comm, exe, netns, env_rank, env_local_rank, env_world_size, "
                                "env_local_world_size, env_group_rank, env_role_rank, "
                                "torchelastic_run_id, slurm_procid, slurm_localid, "
                                "slurm_nodeid, slurm_job_id, nccl_rank, nccl_nranks, rank, "
                                "rank_conflict, nccl_profiler_api, cuda_launch_blocking) VALUES "
                                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                                "?, ?)"));
  std::optional<int64_t> netns;
  if (p.netns) netns = static_cast<int64_t>(*p.netns);
  std::optional<std::string> comm, exe, conflict;
  if (!p.comm.empty()) comm = p.comm;
  if (!p.exe.empty()) exe = p.exe;
  if (!p.rank_conflict.empty()) conflict = p.rank_conflict;
  st.Bind(1, node_).Bind(2, p.pid).Bind(3, p.first_seen_ns).Bind(4, comm).Bind(5, exe);
  st.Bind(6, netns).Bind(7, p.env.rank).Bind(8, p.env.local_rank).Bind(9, p.env.world_size);
  st.Bind(10, p.env.local_world_size).Bind(11, p.env.group_rank).Bind(12, p.env.role_rank);
  st.Bind(13, p.env.torchelastic_run_id).Bind(14, p.env.slurm_procid);
  st.Bind(15, p.env.slurm_localid).Bind(16, p.env.slurm_nodeid).Bind(17, p.env.slurm_job_id);
  st.Bind(18, p.nccl_rank).Bind(19, p.nccl_nranks).Bind(20, p.rank).Bind(21, conflict);
  st.Bind(22, p.nccl_profiler_api).Bind(23, p.env.cuda_launch_blocking);
  return st.Run();
}

}  // namespace rs::rec
