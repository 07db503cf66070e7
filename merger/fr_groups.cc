#include "merger/fr_groups.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

namespace rs::merge::fr {
namespace {

constexpr std::string_view kDefaultGroupDesc = "default_pg";

}  // namespace

void ResolveGroups(Dump& dump) {
  std::vector<ProcessGroup> named, unnamed;
  for (ProcessGroup& g : dump.groups) (g.name.empty() ? unnamed : named).push_back(std::move(g));
  dump.groups = std::move(named);
  if (unnamed.empty()) return;
  // The groups of the process's first backend (pg_id = local_id_ 0), as its entries name them.
  std::set<std::pair<std::string, std::string>> first;
  std::optional<int64_t> later;  // a pg_id of a backend built after the first
  for (const Entry& e : dump.entries) {
    if (e.pg_id == 0) {
      first.emplace(e.pg_name, e.pg_desc);
    } else if (e.pg_id > 0) {
      later = e.pg_id;
    }
  }
  for (ProcessGroup& u : unnamed) {
    const std::string size = std::to_string(u.ranks.size());
    if (u.ranks.empty()) {
      dump.notes.push_back(
          "pg_config holds an entry under an empty name with no ranks (gloo records a group's "
          "ranks when its backend is built, before the group is named and given its global "
          "ranks: every gloo group but the first is recorded so); groups no pg_config lists "
          "keep unknown members");
      continue;
    }
    // The first backend's groupRanks() is 0..size-1, and a default group holds every rank:
    // a list of another shape was not written so (a later writer may name its groups).
    bool counting = true;
    for (size_t i = 0; i < u.ranks.size(); ++i) counting = counting && u.ranks[i] == int64_t(i);
    counting = counting && dump.rank < static_cast<int64_t>(u.ranks.size());
    // Each gloo backend built replaces the unnamed entry with its own 0..size-1 (PyTorch
    // 2.14's gloo dumps of a job with tp and dp subgroups hold '[0, 1]' on every rank: the
    // last subgroup's positions). Once a later backend left entries, the entry is not the
    // first group's.
    if (counting && !later && first.size() == 1 && !first.begin()->first.empty() &&
        first.begin()->second == kDefaultGroupDesc) {
      const auto& [name, desc] = *first.begin();
      const bool listed = std::any_of(dump.groups.begin(), dump.groups.end(),
                                      [&](const ProcessGroup& g) { return g.name == name; });
      if (!listed) {
        u.name = name;
        u.desc = desc;
        u.members = "default_group";
        dump.groups.push_back(std::move(u));
      }
      continue;
    }
    std::string why;
    if (!counting) {
      why = "its ranks are not 0.." + std::to_string(u.ranks.size() - 1) +
            " with this rank among them, as the first gloo group's are";
    } else if (first.empty()) {
      why = "no entry of the process's first group (pg_id 0) is left in the dump";
    } else if (later) {
      why = "entries of pg_id " + std::to_string(*later) +
            " show a gloo group built after the first, and each one built replaces this "
            "entry with its own positions 0..size-1";
    } else if (first.size() > 1) {
      why = "entries of pg_id 0 name several groups";
    } else {
      why = "pg_id 0 is group '" + first.begin()->first + "' (" + first.begin()->second +
            "), not the default group: its " + size +
            " ranks are positions in that group, not global ranks";
    }
    dump.notes.push_back("pg_config holds an entry of " + size +
                         " ranks under an empty name (gloo records the ranks of its first "
                         "group before the group is named) that cannot be tied to a group: " +
                         why + "; left out, and groups no pg_config lists keep unknown members");
  }
}

}  // namespace rs::merge::fr
