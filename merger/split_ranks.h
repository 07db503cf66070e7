// The rank and size of every communicator made by ncclCommSplit, derived from every member's
// split (nccl_events rows COMM_SPLIT with split_color, split_key, split_seq).
//
// NCCL's ncclCommSplit (nccl.h; src/init.cc): the members of the parent that pass one color
// form one new communicator; their ranks in it are ordered by key, equal keys by their rank in
// the parent; a member passing NCCL_SPLIT_NOCOLOR (-1) gets none. Each recorder sees only its
// node's members, so the child's rows carry no rank unless the program asked NCCL
// (ncclCommUserRank); only the merge sees them all. A split is used only where every member of
// the parent recorded it (as many distinct parent ranks as the parent has); otherwise its
// children keep rank NULL and a warning says so (never guessed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::merge {

struct SplitRanksResult {
  int64_t communicators = 0;  // children whose rank and nranks were derived
  int64_t rows = 0;           // nccl_events rows given them
  std::vector<std::string> warnings;
};

// Fills nccl_events.rank and nranks where NULL on the rows of split communicators.
rs::Result<SplitRanksResult> DeriveSplitRanks(rs::Db& out);

}  // namespace rs::merge
