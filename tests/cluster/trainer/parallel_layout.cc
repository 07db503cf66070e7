#include "parallel_layout.h"

#include <algorithm>
#include <charconv>

namespace trainer {
namespace {

// Strides of a shape, fastest dimension first: {1, s0, s0*s1, ...}.
std::vector<int> PrefixProduct(const std::vector<int>& sizes) {
  std::vector<int> out{1};
  for (int s : sizes) out.push_back(out.back() * s);
  return out;
}

// The index of each dimension in `shape` (fastest first) of the flat `index`.
std::vector<int> Decompose(int index, const std::vector<int>& shape) {
  std::vector<int> stride = PrefixProduct(shape);
  std::vector<int> idx;
  for (size_t i = 0; i < shape.size(); ++i) idx.push_back(index / stride[i] % shape[i]);
  return idx;
}

int Inner(const std::vector<int>& a, const std::vector<int>& b) {
  int sum = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kTp:
      return "tp";
    case Role::kPp:
      return "pp";
    case Role::kDp:
      return "dp";
    case Role::kEp:
      return "ep";
  }
  return "?";
}

const char* RoleGroupDesc(Role role) {
  // The group_desc Megatron passes to torch.distributed.new_group for each (parallel_state.py);
  // PyTorch writes it into the Flight Recorder's pg_config and entries. Gradients are reduced
  // over the data-parallel group with context parallelism (the same ranks while cp = 1).
  switch (role) {
    case Role::kTp:
      return "TENSOR_MODEL_PARALLEL_GROUP";
    case Role::kPp:
      return "PIPELINE_MODEL_PARALLEL_GROUP";
    case Role::kDp:
      return "DATA_PARALLEL_GROUP_WITH_CP";
    case Role::kEp:
      return "EXPERT_MODEL_PARALLEL_GROUP";
  }
  return "?";
}

rs::Result<Role> ParseRole(std::string_view name) {
  for (Role r : {Role::kTp, Role::kPp, Role::kDp, Role::kEp}) {
    if (name == RoleName(r)) return r;
  }
  return rs::Error("'" + std::string(name) + "' is not a parallel dimension (tp, pp, dp, ep)");
}

rs::Result<ParallelSpec> ParseParallel(std::string_view text) {
  ParallelSpec spec;
  bool seen[4] = {};
  const std::string all(text);
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return rs::Error("--parallel '" + all + "': '" + std::string(item) +
                       "' is not NAME=SIZE (e.g. tp=2,pp=2,dp=2,ep=2)");
    }
    ASSIGN_OR_RETURN(Role role, ParseRole(item.substr(0, eq)));
    std::string_view value = item.substr(eq + 1);
    int size = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), size);
    // 64 ranks per dimension is far beyond what one machine's test bed runs; it bounds the
    // products below against overflow.
    if (ec != std::errc() || end != value.data() + value.size() || size < 1 || size > 64) {
      return rs::Error("--parallel '" + all + "': the size of " + RoleName(role) + " '" +
                       std::string(value) + "' is not a number in 1..64");
    }
    int& slot = role == Role::kTp   ? spec.tp
                : role == Role::kPp ? spec.pp
                : role == Role::kDp ? spec.dp
                                    : spec.ep;
    if (seen[static_cast<int>(role)]) {
      return rs::Error("--parallel '" + all + "': " + RoleName(role) + " is given twice");
    }
    seen[static_cast<int>(role)] = true;
    slot = size;
  }
  return spec;
}

std::string ToString(const ParallelSpec& s) {
  return "tp=" + std::to_string(s.tp) + ",pp=" + std::to_string(s.pp) +
         ",dp=" + std::to_string(s.dp) + ",ep=" + std::to_string(s.ep);
}

std::vector<std::vector<int>> MaskedOrthogonalGroups(const std::vector<int>& sizes,
                                                     const std::vector<bool>& mask) {
  std::vector<int> stride = PrefixProduct(sizes);
  std::vector<int> masked_shape, unmasked_shape, masked_stride, unmasked_stride;
  for (size_t i = 0; i < sizes.size(); ++i) {
    (mask[i] ? masked_shape : unmasked_shape).push_back(sizes[i]);
    (mask[i] ? masked_stride : unmasked_stride).push_back(stride[i]);
  }
  const int group_size = PrefixProduct(masked_shape).back();
  const int groups = stride.back() / group_size;
  std::vector<std::vector<int>> out;
  for (int g = 0; g < groups; ++g) {
    const int base = Inner(Decompose(g, unmasked_shape), unmasked_stride);
    std::vector<int> ranks;
    for (int r = 0; r < group_size; ++r) {
      ranks.push_back(Inner(Decompose(r, masked_shape), masked_stride) + base);
    }
    out.push_back(std::move(ranks));
  }
  return out;
}

rs::Result<ParallelLayout> ParallelLayout::Create(const ParallelSpec& spec, int world_size,
                                                  int ranks_per_node) {
  const std::string shape = "--parallel " + ToString(spec);
  if (spec.tp * spec.pp * spec.dp != world_size) {
    return rs::Error(shape + ": tp x pp x dp = " + std::to_string(spec.tp * spec.pp * spec.dp) +
                     " ranks, but the job has WORLD_SIZE=" + std::to_string(world_size) +
                     " (change the shape or the number of ranks)");
  }
  if (spec.dp % spec.ep != 0) {
    return rs::Error(shape + ": ep=" + std::to_string(spec.ep) +
                     " does not divide dp=" + std::to_string(spec.dp) +
                     " (Megatron draws the expert-parallel ranks from the data-parallel ones)");
  }
  if (ranks_per_node < 1 || ranks_per_node % spec.tp != 0) {
    return rs::Error(
        shape + ": tp=" + std::to_string(spec.tp) +
        " does not divide the ranks per node (LOCAL_WORLD_SIZE=" + std::to_string(ranks_per_node) +
        "): a tensor-parallel group must sit inside one node");
  }
  return ParallelLayout(spec, world_size);
}

Coords ParallelLayout::CoordsOf(int rank) const {
  Coords c;
  c.tp = rank % spec_.tp;
  c.dp = rank / spec_.tp % spec_.dp;
  c.pp = rank / (spec_.tp * spec_.dp);
  // Expert grid tp-ep-edp-pp: dp_rank = ep_rank + ep * edp_rank.
  c.ep = c.dp % spec_.ep;
  c.edp = c.dp / spec_.ep;
  return c;
}

std::vector<std::vector<int>> ParallelLayout::Groups(Role role) const {
  if (role == Role::kEp) {  // the expert grid, order tp-ep-dp-pp (cp = 1 dropped)
    return MaskedOrthogonalGroups({spec_.tp, spec_.ep, spec_.dp / spec_.ep, spec_.pp},
                                  {false, true, false, false});
  }
  // The dense grid, order tp-dp-pp (cp and ep of size 1 dropped: they change nothing).
  return MaskedOrthogonalGroups({spec_.tp, spec_.dp, spec_.pp},
                                {role == Role::kTp, role == Role::kDp, role == Role::kPp});
}

std::vector<int> ParallelLayout::GroupOf(Role role, int rank) const {
  for (std::vector<int>& g : Groups(role)) {
    if (std::find(g.begin(), g.end(), rank) != g.end()) return g;
  }
  return {};
}

int ParallelLayout::GroupSize(Role role) const {
  switch (role) {
    case Role::kTp:
      return spec_.tp;
    case Role::kPp:
      return spec_.pp;
    case Role::kDp:
      return spec_.dp;
    case Role::kEp:
      return spec_.ep;
  }
  return 1;
}

}  // namespace trainer
