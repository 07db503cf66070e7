#include "analyzer/diff.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "analyzer/confidence.h"
#include "analyzer/report_format.h"
#include "rscore/cli.h"

namespace rs::analyzer {
namespace {

DiffSide Side(const Report& r, const CollectiveData& data) {
  DiffSide s;
  s.input = r.input;
  s.verdict = r.verdict;
  s.verdict_kind = r.verdict_kind;
  s.arrival_basis = r.timing.arrival_basis;
  s.ranks = r.ranks;
  s.collectives = r.collectives;
  int64_t first = -1, last = -1;
  for (const Collective& g : data.collectives) {
    if (!g.compared() || g.done < 0) continue;
    if (first < 0 || g.first_arrival < first) first = g.first_arrival;
    last = std::max(last, g.done);
  }
  s.span_ns = first >= 0 && last > first ? last - first : 0;
  for (const NodeClock& c : r.clock)
    s.clock_bound_ns = std::max(s.clock_bound_ns, c.error_bound_ns);
  if (r.hang.detected) s.hang = r.hang.summary;
  return s;
}

std::string Who(const Straggler& s) {
  if (s.rank) return s.node + " rank " + std::to_string(*s.rank);
  if (s.ranks.empty()) return s.node;
  std::vector<int64_t> ranks = s.ranks;
  std::sort(ranks.begin(), ranks.end());
  return s.node + " (ranks " + rs::cli::RankRanges(ranks) + ")";
}

// The ranks a finding names (its node where it names none): what matches it across runs.
std::string FindingKey(const Straggler& s) {
  std::vector<int64_t> ranks = s.ranks;
  if (s.rank && std::find(ranks.begin(), ranks.end(), *s.rank) == ranks.end()) {
    ranks.push_back(*s.rank);
  }
  if (ranks.empty()) return "node " + s.node;
  std::sort(ranks.begin(), ranks.end());
  return "ranks " + rs::cli::RankRanges(ranks);
}

bool Names(const Report& r, int64_t rank) {
  return std::any_of(r.stragglers.begin(), r.stragglers.end(), [rank](const Straggler& s) {
    return s.rank == rank || std::find(s.ranks.begin(), s.ranks.end(), rank) != s.ranks.end();
  });
}

std::vector<FindingDiff> Findings(const std::vector<Straggler>& a, const std::vector<Straggler>& b,
                                  const std::string& kind) {
  std::map<std::string, const Straggler*> in_a;
  for (const Straggler& s : a) in_a.emplace(FindingKey(s), &s);
  std::vector<FindingDiff> added, kept, removed;
  std::set<std::string> seen;
  for (const Straggler& s : b) {
    const std::string key = FindingKey(s);
    if (!seen.insert(key).second) continue;
    FindingDiff f;
    f.kind = kind;
    f.who = Who(s);
    f.cause_b = s.cause;
    f.confidence_b = ConfidenceName(s.confidence);
    f.summary = s.summary;
    auto it = in_a.find(key);
    if (it == in_a.end()) {
      f.change = "added";
      added.push_back(std::move(f));
      continue;
    }
    f.change = "kept";
    f.cause_a = it->second->cause;
    f.confidence_a = ConfidenceName(it->second->confidence);
    kept.push_back(std::move(f));
  }
  for (const auto& [key, s] : in_a) {
    if (seen.count(key)) continue;
    seen.insert(key);
    FindingDiff f;
    f.kind = kind;
    f.change = "removed";
    f.who = Who(*s);
    f.cause_a = s->cause;
    f.confidence_a = ConfidenceName(s->confidence);
    f.summary = s->summary;
    removed.push_back(std::move(f));
  }
  std::vector<FindingDiff> out = std::move(added);
  for (auto* part : {&kept, &removed}) {
    out.insert(out.end(), std::make_move_iterator(part->begin()),
               std::make_move_iterator(part->end()));
  }
  return out;
}

std::string Label(const ArrivalStats& s) {
  if (s.rank) return s.node + " rank " + std::to_string(*s.rank);
  return s.node + " pid " + std::to_string(s.pid.value_or(0));
}

int64_t NodeBound(const Report& r, const std::string& node) {
  for (const NodeClock& c : r.clock) {
    if (c.node == node) return c.error_bound_ns;
  }
  return 0;
}

void CompareRanks(const Report& a, const Report& b, Diff& d) {
  std::map<int64_t, const ArrivalStats*> in_a, in_b;
  for (const ArrivalStats& s : a.per_rank) {
    if (s.rank) {
      in_a.emplace(*s.rank, &s);
    } else {
      d.ranks_only_a.push_back(Label(s));
    }
  }
  for (const ArrivalStats& s : b.per_rank) {
    if (s.rank) {
      in_b.emplace(*s.rank, &s);
    } else {
      d.ranks_only_b.push_back(Label(s));
    }
  }
  for (const auto& [rank, sa] : in_a) {
    auto it = in_b.find(rank);
    if (it == in_b.end()) {
      d.ranks_only_a.push_back(Label(*sa));
      continue;
    }
    const ArrivalStats& sb = *it->second;
    RankDiff r;
    r.rank = rank;
    r.node_a = sa->node;
    r.node_b = sb.node;
    r.collectives_a = sa->collectives;
    r.collectives_b = sb.collectives;
    r.last_a = sa->last_count;
    r.last_b = sb.last_count;
    r.lateness_a = sa->median_lateness_ns;
    r.lateness_b = sb.median_lateness_ns;
    r.duration_a = sa->median_duration_ns;
    r.duration_b = sb.median_duration_ns;
    r.bound_ns = NodeBound(a, sa->node) + NodeBound(b, sb.node);
    r.named_a = Names(a, rank);
    r.named_b = Names(b, rank);
    d.ranks.push_back(std::move(r));
  }
  for (const auto& [rank, sb] : in_b) {
    if (!in_a.count(rank)) d.ranks_only_b.push_back(Label(*sb));
  }
  std::stable_sort(d.ranks.begin(), d.ranks.end(),
                   [](const RankDiff& x, const RankDiff& y) { return x.Change() > y.Change(); });
}

struct KindSamples {
  KindDiff kind;
  std::vector<int64_t> span_a, span_b, after_a, after_b;
};

std::string Members(const CollectiveData& data, const Collective& g) {
  std::vector<int64_t> ranks;
  for (size_t i = g.begin; i < g.end; ++i) {
    const std::optional<int64_t>& rank = data.participants[data.calls[i].participant].rank;
    if (!rank) return std::to_string(g.end - g.begin) + " ranks";
    ranks.push_back(*rank);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return "ranks " + rs::cli::RankRanges(ranks);
}

void AddKinds(const CollectiveData& data, bool other, std::map<std::string, KindSamples>& kinds) {
  for (const Collective& g : data.collectives) {
    if (!g.compared()) continue;
    const NcclCall& c = data.calls[g.begin];
    const std::string members = Members(data, g);
    const std::string key =
        c.op + "|" + (c.count ? std::to_string(*c.count) : "-") + "|" + c.datatype + "|" + members;
    KindSamples& k = kinds[key];
    k.kind.op = c.op;
    k.kind.count = c.count;
    k.kind.datatype = c.datatype;
    k.kind.members = members;
    ++(other ? k.kind.n_b : k.kind.n_a);
    if (g.done < 0) continue;
    (other ? k.span_b : k.span_a).push_back(g.done - g.first_arrival);
    (other ? k.after_b : k.after_a).push_back(g.done - g.last_arrival);
  }
}

int64_t MedianOr(std::vector<int64_t>& v) { return v.empty() ? -1 : Quantile(v, 0.5); }

void CompareKinds(const CollectiveData& ca, const CollectiveData& cb, Diff& d) {
  std::map<std::string, KindSamples> kinds;
  AddKinds(ca, false, kinds);
  AddKinds(cb, true, kinds);
  for (auto& [key, k] : kinds) {
    k.kind.span_a = MedianOr(k.span_a);
    k.kind.span_b = MedianOr(k.span_b);
    k.kind.after_last_a = MedianOr(k.after_a);
    k.kind.after_last_b = MedianOr(k.after_b);
    d.kinds.push_back(k.kind);
  }
  // The most time added first; kinds in one recording only after those in both.
  std::stable_sort(d.kinds.begin(), d.kinds.end(), [](const KindDiff& x, const KindDiff& y) {
    const bool both_x = x.n_a > 0 && x.n_b > 0, both_y = y.n_a > 0 && y.n_b > 0;
    if (both_x != both_y) return both_x;
    return x.Added() > y.Added();
  });
}

void AddWarnings(const Report& a, const Report& b, Diff& d) {
  if (!d.ranks_only_a.empty() || !d.ranks_only_b.empty()) {
    d.warnings.push_back("the recordings' ranks differ (BASELINE " + std::to_string(a.ranks) +
                         ", OTHER " + std::to_string(b.ranks) + "): only the " +
                         std::to_string(d.ranks.size()) +
                         " ranks in both are compared; the others are listed apart");
  }
  if (!a.timing.arrival_basis.empty() && !b.timing.arrival_basis.empty() &&
      a.timing.arrival_basis != b.timing.arrival_basis) {
    d.warnings.push_back("arrivals rest on different timing in the two recordings (BASELINE " +
                         Spoken(a.timing.arrival_basis) + ", OTHER " +
                         Spoken(b.timing.arrival_basis) +
                         "): a lateness change may be the change of basis (record both with "
                         "the profiler plugin, or both without)");
  }
  for (const Report* r : {&a, &b}) {
    const char* which = r == &a ? "BASELINE" : "OTHER";
    if (r->collectives == 0) {
      d.warnings.push_back(std::string(which) +
                           " has no collective seen by two or more ranks: nothing of it to "
                           "compare");
    }
    if (r->verdict_kind == "undetermined") {
      d.warnings.push_back(std::string(which) + "'s report could not decide: " + r->verdict);
    }
  }
  const size_t kinds_both = std::count_if(d.kinds.begin(), d.kinds.end(),
                                          [](const KindDiff& k) { return k.n_a > 0 && k.n_b > 0; });
  if (!d.kinds.empty() && kinds_both == 0) {
    d.warnings.push_back(
        "no kind of collective (operation, count, data type, ranks) is in both recordings: "
        "they may be different jobs");
  }
}

std::string Percent(double a, double b) {
  if (a <= 0) return "";
  const double change = (b - a) / a;
  return " (" + std::string(change >= 0 ? "+" : "") + FormatPercent(change) + ")";
}

std::string Headline(const Diff& d) {
  std::vector<std::string> parts;
  for (const FindingDiff& f : d.findings) {
    if (f.kind != "verdict") continue;
    if (f.change == "added") {
      parts.push_back("new in OTHER: " + f.who + " (" + f.cause_b + ", " + f.confidence_b + ")");
    } else if (f.change == "removed") {
      parts.push_back("gone since BASELINE: " + f.who + " (" + f.cause_a + ")");
    } else if (f.cause_a != f.cause_b) {
      parts.push_back(f.who + " now " + f.cause_b + " (was " + f.cause_a + ")");
    }
  }
  std::string line;
  if (parts.empty()) {
    line = d.a.verdict_kind == d.b.verdict_kind
               ? "the same findings in both (" + Spoken(d.b.verdict_kind) + ")"
               : "verdict " + Spoken(d.a.verdict_kind) + " -> " + Spoken(d.b.verdict_kind);
  } else {
    for (size_t i = 0; i < parts.size() && i < 3; ++i) line += (i ? "; " : "") + parts[i];
    if (parts.size() > 3) line += "; " + std::to_string(parts.size() - 3) + " more";
  }
  if (d.a.Rate() > 0 && d.b.Rate() > 0) {
    line += "; collectives per second " + FormatFixed1(d.a.Rate()) + " -> " +
            FormatFixed1(d.b.Rate()) + Percent(d.a.Rate(), d.b.Rate());
  }
  return line;
}

}  // namespace

Diff BuildDiff(const Report& a, const CollectiveData& ca, const Report& b,
               const CollectiveData& cb) {
  Diff d;
  d.a = Side(a, ca);
  d.b = Side(b, cb);
  d.findings = Findings(a.stragglers, b.stragglers, "verdict");
  for (FindingDiff& f : Findings(a.observations, b.observations, "observation")) {
    d.findings.push_back(std::move(f));
  }
  CompareRanks(a, b, d);
  CompareKinds(ca, cb, d);
  AddWarnings(a, b, d);
  d.headline = Headline(d);
  return d;
}

}  // namespace rs::analyzer
