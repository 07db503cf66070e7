// Stragglers of a job whose ranks sit in several communicators (tensor-, pipeline-, data- and
// expert-parallel groups): the ranks late on their own account in every group they are in.
//
// A rank whose own work is slow (its device, its host, what runs beside it) reaches every
// collective that follows that work after the other members, whatever the group. A rank that
// is late only because it waited for another one first — in another group's collective, a
// receive, a send — is early somewhere: in the call where it waited. Its own lateness
// (held_index.h: less what such a call held it) is what the per-group view (GroupStats)
// compares, and a rank is named only where that is above the other members' in each of its
// groups, beyond noise in each.
#pragma once

#include <vector>

#include "analyzer/call_semantics.h"
#include "analyzer/collectives.h"
#include "analyzer/report_model.h"
#include "analyzer/side_events.h"
#include "analyzer/straggler.h"

namespace rs::analyzer {

// In each of its groups its mean excess must reach this many standard errors (as a node's
// against the other nodes, collectives.h NodeExcess). Collectives that follow each other are
// correlated and a member's place can make it later in one group: on the multi-group test bed
// (tp=2,pp=2,dp=2,ep=2 on 4 nodes, the emulated devices sharing the machine's two CPUs) one
// member of each tensor-parallel group of a clean 30- or 40-step run was later by up to 14
// errors (+0.45 ms), but no healthy rank was later beyond 1.7 errors in a second group. A rank
// with a 4x slower device was later in both of its groups: by 8 to 19 errors in its
// tensor-parallel group; in its data-parallel group, which meets twice a step after little
// work of its own, by 2.3 to 2.9 errors over 9 steps, 2.9 to 4.9 over 30, 4.2 to 4.6 over 40.
constexpr double kGroupStragglerZ = 3.0;

// One verdict per rank so named (medium confidence where a group rests on device waits: that
// reading assumes the ranks leave a collective together), with its groups as evidence and the
// causes of its own lateness. `skip`: participants already named by another lateness verdict.
std::vector<Straggler> GroupStragglers(const CollectiveData& data,
                                       const std::vector<GroupView>& groups,
                                       const std::vector<ArrivalStats>& stats,
                                       const std::vector<NodeClock>& clocks, const SideEvents& side,
                                       const CallSemantics& sem, const std::vector<int32_t>& skip);

// Several communicators per rank (r.per_group): GroupStragglers appended to `ranked`. A
// determined lateness verdict (lc, ranked's first) keeps its rank or node; an undetermined one
// gives way where the groups name the same rank or node.
void AddGroupStragglers(const CollectiveData& data, const std::vector<ArrivalStats>& stats,
                        const SideEvents& side, const CallSemantics& sem,
                        const LatenessCandidate& lc, const Report& r,
                        std::vector<Straggler>& ranked);

}  // namespace rs::analyzer
