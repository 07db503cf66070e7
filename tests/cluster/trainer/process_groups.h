// The process groups of one rank of a Megatron-LM job, made as the frameworks make them.
// Megatron's initialize_model_parallel (megatron/core/parallel_state.py) calls
// torch.distributed.new_group once per group of each kind, on every rank, in its order:
// data-parallel (with context parallelism), ..., tensor-parallel, pipeline-parallel, ...,
// expert-parallel; here only the four kinds the trainer works in, in that order. With the
// default group bound to a device, PyTorch makes each group's communicator by ncclCommSplit of
// the default group's (distributed_c10d.py: split_from = _get_split_source(default group);
// every rank of the parent calls the split, those outside the new group with
// NCCL_SPLIT_NOCOLOR, perform_nocolor_split), the members with a color from the group's ranks
// (_process_group_color: hash(tuple(ranks)) within C's int) and their rank as the key.
// Group names count every new_group call, members or not (_process_group_name: str of
// _world.group_count; the default group is "0"), so a group has the same name on all its
// members; a rank's local pg ids count only the groups it belongs to (ProcessGroupNCCL's
// local_id_: the default group 0, then 1, 2, ...).
#pragma once

#include <memory>
#include <vector>

#include "flight_recorder.h"
#include "nccl.h"
#include "parallel_layout.h"
#include "process_group.h"
#include "rscore/result.h"

namespace trainer {

struct RankGroups {
  FrGroup world;                     // the default group "0"
  std::vector<ProcessGroup> groups;  // this rank's groups, in creation order
  ProcessGroup* Of(Role role);       // null when the rank has no group of that kind
  ~RankGroups();                     // destroys the split communicators
};

// The splits' color for a group: a non-negative int from its ranks (PyTorch hashes the tuple
// of ranks; any value the members agree on and no other group of the same split shares works).
int SplitColor(const std::vector<int>& ranks);

// Every rank of `world` must call this with the same layout (the splits are collective over
// the world communicator). Roles of size 1 make no group.
rs::Result<std::unique_ptr<RankGroups>> CreateGroups(const ParallelLayout& layout, int rank,
                                                     ncclComm_t world, FlightRecorder* fr);

}  // namespace trainer
