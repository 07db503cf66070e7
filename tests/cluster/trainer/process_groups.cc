#include "process_groups.h"
#include "nonblocking.h"

#include <algorithm>

namespace trainer {

ProcessGroup* RankGroups::Of(Role role) {
  for (ProcessGroup& g : groups) {
    if (g.role() == role) return &g;
  }
  return nullptr;
}

RankGroups::~RankGroups() {
  for (ProcessGroup& g : groups) {
    if (g.comm() != nullptr) ncclCommDestroy(g.comm());
  }
}

int SplitColor(const std::vector<int>& ranks) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the ranks
  for (int r : ranks) {
    h ^= static_cast<uint64_t>(r) + 1;
    h *= 1099511628211ull;
  }
  return static_cast<int>(h % 0x7fffffffull);
}

rs::Result<std::unique_ptr<RankGroups>> CreateGroups(const ParallelLayout& layout, int rank,
                                                     ncclComm_t world, FlightRecorder* fr) {
  auto out = std::make_unique<RankGroups>();
  out->world.pg_id = 0;
  out->world.name = "0";
  out->world.desc = "default_pg";
  for (int r = 0; r < layout.world_size(); ++r) out->world.ranks.push_back(r);
  if (fr != nullptr) fr->AddGroup(out->world);
  int name = 0;       // _world.group_count
  int64_t local = 0;  // ProcessGroupNCCL::local_id_ of this rank's groups
  for (Role role : {Role::kDp, Role::kTp, Role::kPp, Role::kEp}) {
    if (layout.GroupSize(role) == 1) continue;
    for (const std::vector<int>& ranks : layout.Groups(role)) {
      ++name;
      auto it = std::find(ranks.begin(), ranks.end(), rank);
      const bool member = it != ranks.end();
      ncclComm_t comm = nullptr;
      ncclResult_t r = ncclCommSplit(world, member ? SplitColor(ranks) : NCCL_SPLIT_NOCOLOR, rank,
                                     &comm, nullptr);
      r = Settle(comm != nullptr ? comm : world, r, Poll::kSleep);  // a non-blocking split
      if (r != ncclSuccess) {
        return rs::Error(std::string("ncclCommSplit of the ") + RoleName(role) + " group " +
                         std::to_string(name) + " failed: " + ncclGetErrorString(r) +
                         " (a rank died or left the job before the groups were made)");
      }
      if (!member) continue;
      FrGroup info;
      info.pg_id = ++local;
      info.name = std::to_string(name);
      info.desc = RoleGroupDesc(role);
      info.ranks = ranks;
      const int group_rank = static_cast<int>(it - ranks.begin());
      auto g = ProcessGroup::Create(role, std::move(info), comm, group_rank, fr);
      if (!g.ok()) {
        ncclCommDestroy(comm);
        return g.error();
      }
      out->groups.push_back(std::move(*g));
    }
  }
  return out;
}

}  // namespace trainer
