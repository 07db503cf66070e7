#include "analyzer/group_straggler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "analyzer/clock_bounds.h"
#include "analyzer/device_arrival.h"
#include "analyzer/lateness_straggler.h"
#include "analyzer/report_format.h"
#include "analyzer/straggler.h"

namespace rs::analyzer {
namespace {

// Fewest compared collectives of a group that count for a rank (below, one slow call decides).
constexpr int64_t kMinGroupCollectives = 3;

// One rank in one of its groups.
struct Membership {
  const GroupView* group = nullptr;
  GroupMember member;
  double z = 0;          // its mean excess over that mean's standard error
  int64_t bound_ns = 0;  // clock bound of its comparison there (0 on device waits)
};

// Its comparison in `g` compares clocks: arrivals across nodes, or device starts (conversion).
int64_t GroupBound(const CollectiveData& data, const GroupView& g, int32_t p,
                   const std::vector<NodeClock>& clocks) {
  if (g.basis == "device_waits") return 0;  // each wait is read on its own device's clock
  const std::string& node = data.participants[p].node;
  int64_t bound = 0;
  for (const GroupMember& m : g.members) {
    bound = std::max(bound, PairBound(clocks, node, m.node));
  }
  return bound + DeviceBound(data, p);
}

std::string GroupLine(const Membership& m) {
  return m.group->label + ": " + (m.member.excess_ns >= 0 ? "+" : "") +
         FormatNs(m.member.excess_ns) + " +- " + FormatNs(m.member.excess_se_ns) + " over " +
         std::to_string(m.member.collectives) + " collectives, alone last in " +
         std::to_string(m.member.last_count) +
         (m.group->basis == "device_waits" ? " (device waits)" : " (arrivals)");
}

double MinZ(const std::vector<Membership>& in) {
  double z = in.front().z;
  for (const Membership& m : in) z = std::min(z, m.z);
  return z;
}

// The candidate LatenessStraggler turns into a verdict, or none where the rank (or every rank of
// a node: node_ranks) is not later in each group or not far enough beyond noise.
std::optional<LatenessCandidate> Candidate(int32_t p, const std::vector<Membership>& in,
                                           const std::vector<int64_t>* node_ranks = nullptr) {
  if (in.size() < 2) return std::nullopt;  // one group: the one-communicator rules apply
  double sum_z = 0;
  LatenessCandidate c;
  c.participant = p;
  c.determined = true;
  if (node_ranks) {
    c.node_level = true;
    c.node_ranks = *node_ranks;
  }
  c.margin_ns = in.front().member.excess_ns;
  double expected = 0;
  for (const Membership& m : in) {
    if (m.member.collectives < kMinGroupCollectives || m.z < kGroupStragglerZ) {
      return std::nullopt;
    }
    sum_z += m.z;
    c.collectives += m.member.collectives;
    c.last_count += m.member.last_count;
    expected += static_cast<double>(m.member.collectives) /
                static_cast<double>(std::max<size_t>(1, m.group->members.size()));
    c.margin_ns = std::min(c.margin_ns, m.member.excess_ns);
    c.bound_ns = std::max(c.bound_ns, m.bound_ns);
    if (m.member.excess_ns <= m.bound_ns) c.determined = false;
    if (m.group->basis == "device_waits") c.by_waits = true;
  }
  c.z = sum_z / std::sqrt(static_cast<double>(in.size()));  // Stouffer's: all groups together
  c.chance = expected / static_cast<double>(c.collectives);
  RateCandidate(c);
  const std::string by = "(by " + FormatFixed1(MinZ(in)) + " standard errors at least" +
                         (c.by_waits ? ", read on device waits" : "") + ")";
  c.group_lead = node_ranks
                     ? "is later, every rank of it, than the members on other nodes of "
                       "each communicator it shares with them " +
                           by
                     : "is later than the other members of each of its " +
                           std::to_string(in.size()) + " communicators on its own account " + by;
  Evidence all;
  all.kind = "groups";
  all.summary =
      std::string(node_ranks ? "in every communicator its ranks share with other nodes, their"
                             : "in every communicator it is in, its") +
      " own lateness (less what another communicator's call or a send or receive held it) is "
      "above the other members' in the same collectives (mean +- error): " +
      [&] {
        std::string lines;
        for (const Membership& m : in) lines += (lines.empty() ? "" : "; ") + GroupLine(m);
        return lines;
      }() +
      "; at least " + FormatFixed1(MinZ(in)) + " standard errors in each (" +
      FormatFixed1(kGroupStragglerZ) +
      " needed in every one: a rank that only waited for another is early where it waited)";
  all.values = {{"groups", static_cast<double>(in.size())},
                {"min_z", MinZ(in)},
                {"combined_z", c.z},
                {"collectives", static_cast<double>(c.collectives)},
                {"last_count", static_cast<double>(c.last_count)},
                {"last_by_chance", c.chance},
                {"min_excess_ns", static_cast<double>(c.margin_ns)},
                {"clock_bound_ns", static_cast<double>(c.bound_ns)}};
  c.group_evidence.push_back(std::move(all));
  return c;
}

}  // namespace

std::vector<Straggler> GroupStragglers(const CollectiveData& data,
                                       const std::vector<GroupView>& groups,
                                       const std::vector<ArrivalStats>& stats,
                                       const std::vector<NodeClock>& clocks, const SideEvents& side,
                                       const CallSemantics& sem, const std::vector<int32_t>& skip) {
  std::map<int32_t, std::vector<Membership>> by;
  for (const GroupView& g : groups) {
    for (const GroupMember& m : g.members) {
      auto it = data.participant_index.find({m.node, m.pid});
      if (it == data.participant_index.end()) continue;
      Membership x;
      x.group = &g;
      x.member = m;
      x.z = static_cast<double>(m.excess_ns) /
            static_cast<double>(std::max<int64_t>(1, m.excess_se_ns));
      x.bound_ns = GroupBound(data, g, it->second, clocks);
      by[it->second].push_back(std::move(x));
    }
  }
  std::vector<Straggler> out;
  std::set<std::string> named_nodes;
  for (int32_t p : skip) named_nodes.insert(data.participants[p].node);
  for (auto& [p, in] : by) {
    if (std::find(skip.begin(), skip.end(), p) != skip.end()) continue;
    std::optional<LatenessCandidate> c = Candidate(p, in);
    if (!c) continue;
    out.push_back(LatenessStraggler(data, stats, *c, side, sem));
    named_nodes.insert(data.participants[p].node);
  }
  // A node slow alike (its CPUs, its disk, its link): its ranks share their groups inside the
  // node (tensor-parallel), where none of them is later than the other, but each is later than
  // its peers on other nodes in every group it shares with them.
  std::map<std::string, std::vector<int32_t>> nodes;
  for (auto& [p, in] : by) nodes[data.participants[p].node].push_back(p);
  for (auto& [node, ps] : nodes) {
    if (ps.size() < 2 || named_nodes.count(node)) continue;
    std::vector<Membership> across;
    bool every_rank = true;
    for (int32_t p : ps) {
      size_t before = across.size();
      for (const Membership& m : by[p]) {
        const bool others = std::any_of(m.group->members.begin(), m.group->members.end(),
                                        [&](const GroupMember& x) { return x.node != node; });
        if (others) across.push_back(m);
      }
      every_rank = every_rank && across.size() > before;
    }
    if (!every_rank) continue;
    // Its representative: the rank latest in its groups (the node's ranks, that one first).
    std::sort(ps.begin(), ps.end(), [&](int32_t a, int32_t b) {
      return stats[a].median_lateness_ns > stats[b].median_lateness_ns;
    });
    std::vector<int64_t> ranks;
    for (int32_t p : ps) {
      if (data.participants[p].rank) ranks.push_back(*data.participants[p].rank);
    }
    std::optional<LatenessCandidate> c = Candidate(ps.front(), across, &ranks);
    if (c) out.push_back(LatenessStraggler(data, stats, *c, side, sem));
  }
  return out;
}

void AddGroupStragglers(const CollectiveData& data, const std::vector<ArrivalStats>& stats,
                        const SideEvents& side, const CallSemantics& sem,
                        const LatenessCandidate& lc, const Report& r,
                        std::vector<Straggler>& ranked) {
  std::vector<int32_t> named;  // by a determined verdict: the rank, or every rank of its node
  for (size_t p = 0; p < data.participants.size() && lc.participant >= 0 && lc.determined; ++p) {
    const bool same = lc.node_level
                          ? data.participants[p].node == data.participants[lc.participant].node
                          : static_cast<int32_t>(p) == lc.participant;
    if (same) named.push_back(static_cast<int32_t>(p));
  }
  std::vector<Straggler> found =
      GroupStragglers(data, r.per_group, stats, r.clock, side, sem, named);
  if (lc.participant >= 0 && !lc.determined && !ranked.empty()) {
    const Straggler& weak = ranked.front();
    const bool covered = std::any_of(found.begin(), found.end(), [&](const Straggler& s) {
      return s.node == weak.node && (!s.rank || !weak.rank || s.rank == weak.rank);
    });
    if (covered) ranked.erase(ranked.begin());
  }
  for (Straggler& s : found) ranked.push_back(std::move(s));
}

}  // namespace rs::analyzer
