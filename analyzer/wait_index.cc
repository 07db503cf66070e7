#include <algorithm>
#include <set>
#include <string>

#include "wait_internal.h"

namespace analyzer::wait {

int64_t OpTime(const Op& o) {
  return std::max({o.created_ns, o.started_ns.value_or(0), o.completed_ns.value_or(0)});
}

Index::Index(const Input& input) : in(input) {
  collectives.resize(in.ranks.size());
  outcome.resize(in.ranks.size());
  last_activity.assign(in.ranks.size(), 0);
  for (size_t ri = 0; ri < in.ranks.size(); ++ri) {
    const Rank& r = in.ranks[ri];
    if (!r.recorded) continue;
    by_rank.emplace(r.rank, ri);
    for (size_t k = 0; k < r.ops.size(); ++k) {
      const Op& o = r.ops[k];
      outcome[ri].push_back(o.outcome);
      last_activity[ri] = std::max(last_activity[ri], OpTime(o));
      if (!o.p2p && o.group < in.groups.size()) collectives[ri][o.group].push_back(k);
    }
    for (auto& [g, ops] : collectives[ri]) {
      std::stable_sort(ops.begin(), ops.end(),
                       [&](size_t a, size_t b) { return r.ops[a].seq < r.ops[b].seq; });
    }
    latest_ns = std::max(latest_ns, last_activity[ri]);
  }
}

std::optional<size_t> Index::Find(int64_t rank) const {
  auto it = by_rank.find(rank);
  if (it == by_rank.end()) return std::nullopt;
  return it->second;
}

const Op* Index::Last(int64_t rank, size_t group) const {
  auto ri = Find(rank);
  if (!ri) return nullptr;
  auto it = collectives[*ri].find(group);
  if (it == collectives[*ri].end() || it->second.empty()) return nullptr;
  return &in.ranks[*ri].ops[it->second.back()];
}

const Op* Index::At(int64_t rank, size_t group, int64_t seq) const {
  auto ri = Find(rank);
  if (!ri) return nullptr;
  auto it = collectives[*ri].find(group);
  if (it == collectives[*ri].end()) return nullptr;
  for (size_t k : it->second) {
    if (in.ranks[*ri].ops[k].seq == seq) return &in.ranks[*ri].ops[k];
  }
  return nullptr;
}

Outcome Index::OutcomeAt(int64_t rank, size_t group, int64_t seq) const {
  auto ri = Find(rank);
  if (!ri) return Outcome::kPending;
  auto it = collectives[*ri].find(group);
  if (it == collectives[*ri].end()) return Outcome::kPending;
  for (size_t k : it->second) {
    if (in.ranks[*ri].ops[k].seq == seq) return outcome[*ri][k];
  }
  return Outcome::kPending;
}

bool Index::Reached(int64_t rank, size_t group, int64_t seq) const {
  const Op* last = Last(rank, group);
  return last && last->seq >= seq;
}

bool Index::ProvesNotReached(int64_t rank, size_t group, int64_t seq) const {
  auto ri = Find(rank);
  if (!ri || Reached(rank, group, seq)) return false;
  const Rank& r = in.ranks[*ri];
  if (r.gaps) return false;  // entries missing in between: absence proves nothing
  if (!r.wrapped) return true;
  // A wrapped ring drops its oldest entries first: one of this group older than seq held
  // means seq, issued after it, would be held too.
  const Op* last = Last(rank, group);
  return last && last->seq < seq;
}

std::vector<FieldMismatch> FindMismatches(const Index& ix) {
  // (group, seq) -> field -> value -> ranks. A rank with several entries at one sequence (a
  // coalesced group's operations) is one value: its values joined.
  std::map<std::pair<size_t, int64_t>, std::map<int64_t, std::vector<const Op*>>> at;
  for (size_t ri = 0; ri < ix.in.ranks.size(); ++ri) {
    for (const auto& [g, ops] : ix.collectives[ri]) {
      for (size_t k : ops) {
        const Op& o = ix.in.ranks[ri].ops[k];
        if (o.op == rs::NcclOp::kCoalesced) continue;  // its operations are entries of their own
        at[{g, o.seq}][ix.in.ranks[ri].rank].push_back(&o);
      }
    }
  }
  std::vector<FieldMismatch> out;
  for (const auto& [key, by_rank] : at) {
    if (by_rank.size() < 2) continue;
    std::map<std::string, std::map<std::string, std::vector<int64_t>>> fields;
    bool counts_comparable = true;
    for (const auto& [rank, ops] : by_rank) {
      std::string op, count, dtype;
      for (const Op* o : ops) {
        op += (op.empty() ? "" : "+") + std::string(rs::OpName(o->op));
        if (!o->dtype.empty()) dtype += (dtype.empty() ? "" : "+") + o->dtype;
        if (!rs::Traits(o->op).same_count || !o->count) counts_comparable = false;
        if (o->count) count += (count.empty() ? "" : "+") + std::to_string(*o->count);
      }
      fields["op"][op].push_back(rank);
      if (!dtype.empty()) fields["datatype"][dtype].push_back(rank);
      fields["count"][count].push_back(rank);
    }
    for (const auto& [field, variants] : fields) {
      if (variants.size() < 2) continue;
      if (field != "op" && fields["op"].size() > 1) continue;  // the op mismatch says it
      if (field == "count" && !counts_comparable) continue;
      FieldMismatch m;
      m.group = key.first;
      m.seq = key.second;
      m.field = field;
      size_t least = SIZE_MAX, at_least = 0;
      for (const auto& [value, ranks] : variants) {
        m.variants.emplace_back(value, ranks);
        if (ranks.size() < least) {
          least = ranks.size();
          at_least = 1;
          m.minority = ranks;
        } else if (ranks.size() == least) {
          ++at_least;
        }
      }
      if (at_least > 1) m.minority.clear();  // a tie: which side is wrong is not decidable
      out.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace analyzer::wait
