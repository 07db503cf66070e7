// The processes the recorder traces: rows of the `processes` table. A process becomes traced
// by --pid or when a capture source discovers it (e.g. it loaded libnccl); its comm, exe,
// network namespace and rank variables are read once, from <proc_root>/PID.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rscore/identity.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::rec {

struct ProcessInfo {
  int pid = 0;
  int64_t first_seen_ns = 0;
  std::string comm;
  std::string exe;
  std::optional<uint64_t> netns;
  rs::RankEnv env;  // only the rank variables, never the rest of the environment
  std::optional<int64_t> nccl_rank, nccl_nranks;
  std::optional<int64_t> nccl_profiler_api;  // rankscope's plugin in it: NCCL's profiler API
  std::optional<int64_t> rank;  // best known global rank; NULL while the sources disagree
  std::string rank_conflict;    // set when they disagree
};

// Reads the inode of <proc_root>/PID/ns/net (the link text 'net:[INODE]').
std::optional<uint64_t> ReadNetnsInode(const std::string& proc_root, int pid);

class ProcessTable {
 public:
  // `db` may be null (tests of the bookkeeping alone). `scope_netns` != 0 restricts tracing
  // to processes in that network namespace. `now_ns` gives the wall clock for first_seen_ns.
  ProcessTable(rs::Db* db, std::string node, std::string proc_root, uint64_t scope_netns,
               std::function<int64_t()> now_ns);

  // Starts tracing `pid` and writes its row. true: newly traced; false: it already was.
  // Errors: no such process, or outside the --scope netns namespace.
  rs::Result<bool> Trace(int pid);
  // The rank / nranks a process passed to ncclCommInitRank* (first communicator wins).
  // Traces the pid if needed. A disagreement with the environment's rank is stored in
  // rank_conflict, never resolved silently.
  rs::Result<void> SetNcclRank(int pid, int64_t rank, int64_t nranks);
  // The profiler API version NCCL uses with rankscope's plugin in this process (the gpu
  // probe reads it from the plugin's region). Traces the pid if needed.
  rs::Result<void> SetNcclProfilerApi(int pid, int64_t api_version);
  bool IsTraced(int pid) const { return procs_.count(pid) != 0; }
  const ProcessInfo* Find(int pid) const;
  std::vector<int> TracedPids() const;
  // Pids traced since the last call (the event loop tells every probe about them).
  std::vector<int> TakeNewlyTraced();

 private:
  rs::Result<void> Write(const ProcessInfo& p);
  rs::Db* db_;
  std::string node_;
  std::string proc_root_;
  uint64_t scope_netns_;
  std::function<int64_t()> now_ns_;
  std::map<int, ProcessInfo> procs_;
  std::vector<int> newly_traced_;
};

// Fills rank / rank_conflict from the environment rank and the NCCL rank.
void ResolveRank(ProcessInfo& p);

}  // namespace rs::rec
