// Where each rank of a multi-group job sits, as Megatron-LM lays it out
// (megatron/core/parallel_state.py, RankGenerator and generate_masked_orthogonal_rank_groups):
// the parallel dimensions in the order 'tp-cp-ep-dp-pp', tensor-parallel fastest and
// pipeline-parallel slowest, so that
//     global rank = tp_rank + tp * (dp_rank + dp * pp_rank)                (cp = 1)
// and a tensor-parallel group is tp consecutive ranks: with ranks numbered node by node
// (torchrun's RANK = node * LOCAL_WORLD_SIZE + LOCAL_RANK) it sits inside one node whenever tp
// divides the ranks per node. Expert parallelism uses Megatron's second grid (the expert
// RankGenerator: tp = expert_tensor_parallel_size, which defaults to tp, then ep, then the expert
// data-parallel dimension dp / ep, then pp, in the same order), so an expert-parallel group is
// ep ranks of one pipeline stage with the same tensor-parallel rank, drawn from one
// data-parallel group. Context parallelism (cp) is 1 here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rscore/result.h"

namespace trainer {

// The process groups a rank works in, one per parallel dimension.
enum class Role { kTp, kPp, kDp, kEp };
const char* RoleName(Role role);       // "tp", "pp", "dp", "ep"
const char* RoleGroupDesc(Role role);  // Megatron's group_desc: "TENSOR_MODEL_PARALLEL_GROUP", ...
rs::Result<Role> ParseRole(std::string_view name);

struct ParallelSpec {
  int tp = 1, pp = 1, dp = 1, ep = 1;
  bool operator==(const ParallelSpec&) const = default;
};
// "tp=2,pp=2,dp=2" or "tp=2,pp=2,dp=4,ep=2" (any order; a dimension left out is 1).
rs::Result<ParallelSpec> ParseParallel(std::string_view text);
std::string ToString(const ParallelSpec& spec);  // "tp=2,pp=2,dp=2,ep=1"

// A rank's coordinates in both grids.
struct Coords {
  int tp = 0, dp = 0, pp = 0;  // the dense grid
  int ep = 0, edp = 0;         // the expert grid (its tp and pp are the dense grid's)
};

// Megatron's generate_masked_orthogonal_rank_groups: `sizes` are the dimensions, fastest
// first; the groups span the dimensions where `mask` is true, listed in Megatron's order (the
// other dimensions' index, fastest first), each group's ranks in increasing order.
std::vector<std::vector<int>> MaskedOrthogonalGroups(const std::vector<int>& sizes,
                                                     const std::vector<bool>& mask);

class ParallelLayout {
 public:
  // Checks the shape against the job: tp * pp * dp must be the world size, ep must divide dp
  // (Megatron: the world size is a multiple of etp * ep * pp), and tp must divide the ranks per
  // node (the tensor-parallel group inside one node). Errors name the flag and the numbers.
  static rs::Result<ParallelLayout> Create(const ParallelSpec& spec, int world_size,
                                           int ranks_per_node);
  const ParallelSpec& spec() const { return spec_; }
  int world_size() const { return world_; }
  Coords CoordsOf(int rank) const;
  // Every group of a role, in the order Megatron creates them.
  std::vector<std::vector<int>> Groups(Role role) const;
  // The group of `role` holding `rank` (its ranks in group-rank order).
  std::vector<int> GroupOf(Role role, int rank) const;
  int GroupSize(Role role) const;

 private:
  ParallelLayout(const ParallelSpec& spec, int world) : spec_(spec), world_(world) {}
  ParallelSpec spec_;
  int world_ = 1;
};

}  // namespace trainer
