// Stragglers of a job whose ranks sit in several communicators (tensor-, pipeline-, data- and
// expert-parallel groups): the ranks late on their own account in every group they are in.
//
// A rank whose own work is slow (its device, its host, what runs beside it) reaches every
// collective that follows that work after the other members, whatever the group. A rank that
// is late only because it waited for another one first — in another group's collective, a
// receive, a send — is early somewhere: in the call where it waited. Its own lateness
// (held_index.h: less what such a call held it) is what the per-group view (GroupStats)
// compares, and a rank is named only where that is above the other members' in each of its
// groups, and far beyond noise in all of them together.
#pragma once

#include <vector>

#include "call_semantics.h"
#include "collectives.h"
#include "report_model.h"
#include "side_events.h"

namespace analyzer {

// Together the groups' excesses must reach this many standard errors (Stouffer's sum of the
// per-group mean excess over its error, over the square root of the groups). Under no own
// lateness each term is about standard normal, but collectives that follow each other are
// correlated and a pipeline stage's role makes some member of each group a little later: on the
// multi-group test bed (tp=2,pp=2,dp=2,ep=2, 4 nodes, 9 steps) healthy ranks later than their
// peers in every group reached 2.7; ranks with a 4x slower device 8.8 to 9.1.
constexpr double kGroupStragglerZ = 5.0;

// One verdict per rank so named (medium confidence where a group rests on device waits: that
// reading assumes the ranks leave a collective together), with its groups as evidence and the
// causes of its own lateness. `skip`: participants already named by another lateness verdict.
std::vector<Straggler> GroupStragglers(const CollectiveData& data,
                                       const std::vector<GroupView>& groups,
                                       const std::vector<ArrivalStats>& stats,
                                       const std::vector<NodeClock>& clocks, const SideEvents& side,
                                       const CallSemantics& sem, const std::vector<int32_t>& skip);

}  // namespace analyzer
