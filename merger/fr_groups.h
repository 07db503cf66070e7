// A dump's pg_config mapped to the process groups its entries name.
//
// pg_config is keyed by the name a group had when its ranks were recorded
// (FlightRecorderDetail.hpp getPgConfig: one entry per (name, desc) given to record_pg_ranks,
// keyed by the name). ProcessGroupNCCL is given its name and global ranks before it is built
// (distributed_c10d.py sets the options first), so its entries carry the group's name.
// ProcessGroupGloo records its ranks in its constructor, before _new_process_group_helper sets
// options.group_name and options.global_ranks_in_group and before the description is set
// (ProcessGroupGloo.cpp: record_pg_ranks({pg_uid_, pg_desc_}, groupRanks()) right after
// setGroupUid(options_->group_name)), so:
//   - every gloo group of a process is recorded under the same key ('' name, '' desc), each
//     new one replacing the last: at most one unnamed entry survives, the last group built;
//   - its ranks are groupRanks() at that moment. Read from the source, that is 0..size-1 for
//     the process's first gloo backend and empty for later ones (global ranks not set yet);
//     but PyTorch 2.14's real dumps of a job that built tp and dp subgroups after the default
//     group hold '[0, 1]' on every rank, the last subgroup's positions: each backend built
//     writes its own 0..size-1, which are global ranks only for the default group;
//   - entries carry the real name and description (set by then) and pg_id = local_id_.
// Hence the one mapping that holds: an unnamed entry with ranks is the group of the entries
// with pg_id 0, when those entries name one group described 'default_pg' (init_process_group
// builds the default group with group_desc="default_pg") and no entry shows a later backend
// (pg_id > 0) that would have replaced it. Its members are then stored with
// process_groups.members = 'default_group'. An unnamed entry without ranks, or one that cannot
// be tied so, is left out with a note, and the groups no pg_config lists keep unknown
// members (process_groups.members = 'unknown'; fr_import.h says so in a warning).
#pragma once

#include "merger/flight_recorder.h"

namespace rs::merge::fr {

// Rewrites dump.groups: the unnamed pg_config entry named after the group it belongs to, or
// left out with a note in dump.notes.
void ResolveGroups(Dump& dump);

}  // namespace rs::merge::fr
