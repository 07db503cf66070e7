#include "merger/split_ranks.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "rscore/comm_hash.h"

namespace rs::merge {
namespace {

struct Member {
  std::string node;
  int64_t pid = 0;
  int64_t parent_rank = 0;
  int64_t color = 0;
  int64_t key = 0;
};

struct Split {
  std::optional<int64_t> parent_nranks;
  bool nranks_disagree = false;
  std::vector<Member> members;
};

using SplitKey = std::pair<int64_t, int64_t>;  // (parent comm_id_hash, split_seq)

rs::Result<std::map<SplitKey, Split>> ReadSplits(rs::Db& out) {
  std::map<SplitKey, Split> splits;
  ASSIGN_OR_RETURN(rs::Statement st,
                   out.Prepare("SELECT comm_id_hash, split_seq, node, pid, rank, nranks,"
                               " split_color, split_key FROM nccl_events"
                               " WHERE op = 'COMM_SPLIT' AND split_seq IS NOT NULL"
                               " AND comm_id_hash IS NOT NULL AND rank IS NOT NULL"
                               " AND split_color IS NOT NULL AND split_key IS NOT NULL"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    Split& s = splits[{st.Int(0), st.Int(1)}];
    if (std::optional<int64_t> n = st.OptInt(5)) {
      if (s.parent_nranks && *s.parent_nranks != *n) s.nranks_disagree = true;
      s.parent_nranks = n;
    }
    s.members.push_back(Member{st.Text(2), st.Int(3), st.Int(4), st.Int(6), st.Int(7)});
  }
  return splits;
}

// Every member of the parent recorded this split, each once.
bool Complete(const Split& s) {
  if (!s.parent_nranks || s.nranks_disagree) return false;
  std::set<int64_t> ranks;
  for (const Member& m : s.members) ranks.insert(m.parent_rank);
  return ranks.size() == s.members.size() && static_cast<int64_t>(ranks.size()) == *s.parent_nranks;
}

}  // namespace

rs::Result<SplitRanksResult> DeriveSplitRanks(rs::Db& out) {
  SplitRanksResult result;
  ASSIGN_OR_RETURN(auto splits, ReadSplits(out));
  if (splits.empty()) return result;
  RETURN_IF_ERROR(
      out.Exec("CREATE TEMP TABLE split_ranks (node TEXT NOT NULL, pid INTEGER NOT"
               " NULL, comm_id_hash INTEGER NOT NULL, rank INTEGER NOT NULL, nranks"
               " INTEGER NOT NULL, PRIMARY KEY (node, pid, comm_id_hash))"));
  ASSIGN_OR_RETURN(rs::Statement ins,
                   out.Prepare("INSERT OR IGNORE INTO temp.split_ranks VALUES (?,?,?,?,?)"));
  int64_t partial = 0;
  for (auto& [key, split] : splits) {
    if (!Complete(split)) {
      ++partial;
      continue;
    }
    std::map<int64_t, std::vector<Member>> by_color;
    for (Member& m : split.members) {
      if (m.color >= 0) by_color[m.color].push_back(std::move(m));
    }
    for (auto& [color, members] : by_color) {
      std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
        return std::tie(a.key, a.parent_rank) < std::tie(b.key, b.parent_rank);
      });
      // The child's comm_id_hash as the recorder computed it (split_seq counts from 1).
      const uint64_t child =
          rs::SplitCommIdHash(static_cast<uint64_t>(key.first), static_cast<int32_t>(color),
                              static_cast<uint64_t>(key.second - 1));
      for (size_t i = 0; i < members.size(); ++i) {
        RETURN_IF_ERROR(ins.Bind(1, members[i].node)
                            .Bind(2, members[i].pid)
                            .Bind(3, child)
                            .Bind(4, static_cast<int64_t>(i))
                            .Bind(5, static_cast<int64_t>(members.size()))
                            .Run());
      }
      ++result.communicators;
    }
  }
  RETURN_IF_ERROR(
      out.Exec("UPDATE nccl_events SET rank = s.rank, nranks = s.nranks FROM temp.split_ranks s"
               " WHERE nccl_events.node = s.node AND nccl_events.pid = s.pid"
               " AND nccl_events.comm_id_hash = s.comm_id_hash AND nccl_events.rank IS NULL"
               " AND nccl_events.nranks IS NULL"));
  ASSIGN_OR_RETURN(result.rows, out.QueryInt("SELECT changes()"));
  RETURN_IF_ERROR(out.Exec("DROP TABLE temp.split_ranks"));
  if (partial > 0) {
    result.warnings.push_back(
        std::to_string(partial) +
        " ncclCommSplit call(s) were recorded on only some members of the parent communicator "
        "(a node's bundle missing, or recorded after the split): the communicators they made "
        "keep rank NULL where the program did not ask NCCL (ncclCommUserRank)");
  }
  return result;
}

}  // namespace rs::merge
