#include <algorithm>
#include <set>
#include <string>
#include <tuple>

#include "analyzer/collectives.h"
#include "analyzer/hang.h"
#include "analyzer/wait_internal.h"

namespace rs::analyzer::wait {

using rs::NcclOp;

int64_t OpTime(const Op& o) {
  return std::max({o.created_ns, o.started_ns.value_or(0), o.completed_ns.value_or(0)});
}

Index::Index(const Input& input) : in(input) {
  collectives.resize(in.ranks.size());
  outcome.resize(in.ranks.size());
  last_activity.assign(in.ranks.size(), 0);
  stamped_ns.assign(in.ranks.size(), 0);
  for (size_t ri = 0; ri < in.ranks.size(); ++ri) {
    const Rank& r = in.ranks[ri];
    if (!r.recorded) continue;
    by_rank.emplace(r.rank, ri);
    for (size_t k = 0; k < r.ops.size(); ++k) {
      const Op& o = r.ops[k];
      outcome[ri].push_back(o.outcome);
      last_activity[ri] = std::max(last_activity[ri], OpTime(o));
      if (o.outcome == Outcome::kPending && o.started_ns) {
        stamped_ns[ri] = std::max(stamped_ns[ri], *o.started_ns);
      }
      if (!o.p2p && o.group < in.groups.size()) {
        collectives[ri][o.group].push_back(k);
        if (o.outcome == Outcome::kCompleted) {
          auto [it, fresh] = completed_through.emplace(o.group, o.seq);
          if (!fresh) it->second = std::max(it->second, o.seq);
        }
      }
      if (o.p2p && o.peer && o.pair_seq && (o.op == NcclOp::kSend || o.op == NcclOp::kRecv)) {
        const bool send = o.op == NcclOp::kSend;
        placed_[{o.group, send ? r.rank : *o.peer, send ? *o.peer : r.rank, *o.pair_seq, o.op}] = {
            ri, k};
      }
    }
    for (auto& [g, ops] : collectives[ri]) {
      std::stable_sort(ops.begin(), ops.end(),
                       [&](size_t a, size_t b) { return r.ops[a].seq < r.ops[b].seq; });
    }
    latest_ns = std::max(latest_ns, last_activity[ri]);
  }
  latest_ns = std::max(latest_ns, in.taken_ns);
  // Rule 12 is for records taken at different moments: not a recording's (one end), and not
  // in a group with a member without a record (it may have died: an aborted communicator's
  // kernels end and their events fire, so its peers' entries read completed).
  std::erase_if(completed_through, [&](const auto& g) {
    return in.taken_ns > 0 ||
           std::any_of(in.groups[g.first].members.begin(), in.groups[g.first].members.end(),
                       [&](int64_t m) { return !Find(m); });
  });
  std::map<size_t, std::vector<int64_t>> took;  // group -> creation to completion
  for (const Rank& r : in.ranks) {
    if (in.taken_ns > 0) break;  // a recording's: no stuck threshold needed (Young)
    for (const Op& o : r.ops) {
      if (o.outcome == Outcome::kCompleted && o.completed_ns && *o.completed_ns > o.created_ns) {
        took[o.group].push_back(*o.completed_ns - o.created_ns);
      }
    }
  }
  for (auto& [g, t] : took) {  // the recording's threshold (hang.h)
    stuck_ns[g] = std::max(kHangMinStuckNs, kHangStuckFactor * Quantile(t, 0.99));
  }
  taken_at_least_ns = latest_ns;
  for (const Rank& r : in.ranks) {
    for (const Op& o : r.ops) {
      if (o.outcome == Outcome::kFailed && o.timeout_ns) {
        taken_at_least_ns = std::max(taken_at_least_ns, o.created_ns + *o.timeout_ns);
      }
    }
  }
  record_older.assign(in.ranks.size(), false);
  for (const auto& [g, seq] : completed_through) {
    for (int64_t m : in.groups[g].members) {
      auto ri = Find(m);
      if (!ri) continue;
      const Rank& r = in.ranks[*ri];
      const Op* last = Last(m, g);
      // Without any entry of the group only a record that kept everything proves it.
      if (last ? last->seq < seq : !r.wrapped && !r.gaps) record_older[*ri] = true;
    }
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

std::optional<Outcome> Index::CounterpartOutcome(int64_t rank, const Op& o) const {
  if (!o.p2p || !o.peer || !o.pair_seq) return std::nullopt;
  if (o.op != NcclOp::kSend && o.op != NcclOp::kRecv) return std::nullopt;
  const bool send = o.op == NcclOp::kSend;
  auto it = placed_.find({o.group, send ? rank : *o.peer, send ? *o.peer : rank, *o.pair_seq,
                          send ? NcclOp::kRecv : NcclOp::kSend});
  if (it == placed_.end()) return std::nullopt;
  return outcome[it->second.first][it->second.second];
}

bool Index::Young(const Op& o) const {
  if (in.taken_ns > 0) return false;
  auto t = stuck_ns.find(o.group);
  return t != stuck_ns.end() && taken_at_least_ns - o.created_ns < t->second;
}

std::optional<int64_t> Index::StampedWait(const Edge& e) const {
  auto ri = Find(e.from);
  if (in.taken_ns > 0 || !ri || stamped_ns[*ri] == 0) return std::nullopt;
  return stamped_ns[*ri] - in.ranks[*ri].ops[e.op].created_ns;
}

bool Index::ProvesUnanswered(const Edge& e, int64_t to) const {
  const Op& o = in.ranks[*Find(e.from)].ops[e.op];
  if (!o.p2p) return ProvesNotReached(to, o.group, o.seq);
  auto pi = Find(to);
  if (!pi || !o.pair_seq) return false;
  const Rank& peer = in.ranks[*pi];
  return !peer.wrapped && !peer.gaps;
}

bool Index::BriefWait(size_t ri, size_t k) const {
  const Op& o = in.ranks[ri].ops[k];
  if (in.taken_ns > 0) return false;
  if (stamped_ns[ri] > 0) return stamped_ns[ri] - o.created_ns < StuckNs(o.group);
  return Young(o);
}

int64_t Index::StuckNs(size_t group) const {
  auto t = stuck_ns.find(group);
  return t != stuck_ns.end() ? t->second : kHangMinStuckNs;
}

bool Index::TimedOut(const Edge& e) const {
  auto ri = Find(e.from);
  return ri && outcome[*ri][e.op] == Outcome::kFailed;
}

bool Index::Reached(int64_t rank, size_t group, int64_t seq) const {
  auto done = completed_through.find(group);
  if (done != completed_through.end() && done->second >= seq) return true;
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

namespace {

// A field's value of one rank's op as FindMismatches spells it.
std::string FieldValue(const Op& o, const std::string& field) {
  if (field == "op") return std::string(rs::OpName(o.op));
  if (field == "datatype") return o.dtype;
  return o.count ? std::to_string(*o.count) : "";
}

// A tie of two values: the side whose value its ranks never used in any other call of that op
// in the group, where the other side's value is what each of its ranks always used there (the
// test bed's tensor-parallel pair: 8192 once, 16384 in every other all-reduce of both ranks).
// Empty where that does not single one side out (shapes that vary from call to call).
std::vector<int64_t> UnusualSide(const Index& ix, const FieldMismatch& m) {
  if (m.variants.size() != 2) return {};
  // For each side: every rank's value is usual (used elsewhere by it, nothing else used) or
  // novel (used nowhere else by it).
  auto judge = [&](const std::string& value, const std::vector<int64_t>& ranks, bool* usual,
                   bool* novel) {
    *usual = *novel = true;
    for (int64_t rank : ranks) {
      auto ri = ix.Find(rank);
      if (!ri) return false;
      auto g = ix.collectives[*ri].find(m.group);
      if (g == ix.collectives[*ri].end()) return false;
      const Op* here = ix.At(rank, m.group, m.seq);
      if (!here) return false;
      int same = 0, other = 0;
      for (size_t k : g->second) {
        const Op& o = ix.in.ranks[*ri].ops[k];
        if (o.seq == m.seq || o.op != here->op) continue;
        (FieldValue(o, m.field) == value ? same : other) += 1;
      }
      *usual = *usual && same > 0 && other == 0;
      *novel = *novel && same == 0 && other > 0;
    }
    return true;
  };
  bool usual[2], novel[2];
  for (int i = 0; i < 2; ++i) {
    if (!judge(m.variants[i].first, m.variants[i].second, &usual[i], &novel[i])) return {};
  }
  if (novel[0] && usual[1]) return m.variants[0].second;
  if (novel[1] && usual[0]) return m.variants[1].second;
  return {};
}

// Rule 11's tie-break for a pair: per side, is the value what that rank always passes in its
// other calls of that direction with that peer in the group (usual), or one it never passes
// there (novel)? The novel side, against a usual one, is the culprit; otherwise nobody.
std::vector<int64_t> UnusualP2pSide(const Index& ix, const FieldMismatch& m,
                                    const std::vector<const Op*>& sides) {
  bool usual[2], novel[2];
  for (int i = 0; i < 2; ++i) {
    const int64_t rank = i == 0 ? m.sender : m.receiver;
    const Rank& r = ix.in.ranks[*ix.Find(rank)];
    const Op& here = *sides[static_cast<size_t>(i)];
    const std::string value = FieldValue(here, m.field);
    int same = 0, other = 0;
    for (const Op& o : r.ops) {
      if (!o.p2p || &o == &here || o.group != m.group || o.op != here.op || o.peer != here.peer) {
        continue;
      }
      (FieldValue(o, m.field) == value ? same : other) += 1;
    }
    usual[i] = same > 0 && other == 0;
    novel[i] = same == 0 && other > 0;
  }
  if (novel[0] && usual[1]) return {m.sender};
  if (novel[1] && usual[0]) return {m.receiver};
  return {};
}

// Rule 11: the pairs whose send and receive differ in count or datatype.
void FindP2pMismatches(const Index& ix, std::vector<FieldMismatch>& out) {
  // (group, sender, receiver, k) -> {its send, its receive}
  std::map<std::tuple<size_t, int64_t, int64_t, int64_t>, std::pair<const Op*, const Op*>> pairs;
  for (const Rank& r : ix.in.ranks) {
    if (!r.recorded) continue;
    for (const Op& o : r.ops) {
      if (!o.p2p || !o.peer || !o.pair_seq) continue;
      if (o.op == NcclOp::kSend) pairs[{o.group, r.rank, *o.peer, *o.pair_seq}].first = &o;
      if (o.op == NcclOp::kRecv) pairs[{o.group, *o.peer, r.rank, *o.pair_seq}].second = &o;
    }
  }
  for (const auto& [key, ops] : pairs) {
    const auto& [group, sender, receiver, k] = key;
    if (!ops.first || !ops.second || sender == receiver) continue;
    for (const std::string field : {"count", "datatype"}) {
      const std::string a = FieldValue(*ops.first, field), b = FieldValue(*ops.second, field);
      if (a.empty() || b.empty() || a == b) continue;
      FieldMismatch m;
      m.group = group;
      m.seq = k;
      m.p2p = true;
      m.sender = sender;
      m.receiver = receiver;
      m.field = field;
      m.variants = {{a, {sender}}, {b, {receiver}}};
      m.minority = UnusualP2pSide(ix, m, {ops.first, ops.second});
      m.by_history = !m.minority.empty();
      out.push_back(std::move(m));
    }
  }
}

}  // namespace

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
      if (at_least > 1) {
        m.minority.clear();  // a tie: which side is wrong is not decidable by the votes
        m.minority = UnusualSide(ix, m);
        m.by_history = !m.minority.empty();
      }
      out.push_back(std::move(m));
    }
  }
  FindP2pMismatches(ix, out);
  return out;
}

}  // namespace rs::analyzer::wait
