#include "analyzer/report_warnings.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "analyzer/report_format.h"
#include "rscore/cli.h"

namespace rs::analyzer {
namespace {

// The value `name` of the first evidence of kind `kind` (any kind where empty).
std::optional<double> EvidenceValue(const Straggler& s, const std::string& kind,
                                    const std::string& name) {
  for (const Evidence& e : s.evidence) {
    if (!kind.empty() && e.kind != kind) continue;
    for (const auto& [key, v] : e.values) {
      if (key == name) return v;
    }
  }
  return std::nullopt;
}

// "node1 rank 3, cpu_contention": which verdict, as the warnings name it.
std::string VerdictName(const Straggler& s) {
  return s.node + (s.rank ? " rank " + std::to_string(*s.rank) : "") + ", " + s.cause;
}

// A verdict one of whose compared nodes has a bound wider than its lateness.
struct Dependent {
  size_t verdict = 0;
  int64_t lateness_ns = 0;
  std::vector<std::pair<std::string, int64_t>> nodes;  // (node, its bound), natural order
};

}  // namespace

std::optional<int64_t> ComparedLateness(const Straggler& s, bool waits_view) {
  if (s.cause == "hang" || s.arrival_basis == "device_waits") return std::nullopt;
  if (!s.arrival_basis.empty()) {
    const auto margin = EvidenceValue(s, "lateness", "margin_ns");
    const auto bound = EvidenceValue(s, "clock", "clock_bound_ns");
    if (!margin) return std::nullopt;
    // Ordered by its node-mates on one host clock: no cross-node comparison decided it.
    if (s.ordering_determined && bound && *margin <= *bound) return std::nullopt;
    return static_cast<int64_t>(*margin);
  }
  if (waits_view) return std::nullopt;
  const auto excess = EvidenceValue(s, "", "lateness_excess_ns");
  if (!excess || *excess <= 0) return std::nullopt;
  return static_cast<int64_t>(*excess);
}

void NameResourceLatenessBasis(Report& r) {
  const bool waits_view = r.timing.device_collectives > 0;
  for (std::vector<Straggler>* list : {&r.stragglers, &r.observations}) {
    for (Straggler& s : *list) {
      if (!s.arrival_basis.empty() || s.cause == "hang") continue;
      s.arrival_basis = waits_view ? "device_waits" : r.timing.arrival_basis;
    }
  }
}

void AddClockBoundWarnings(Report& r) {
  std::vector<std::pair<std::string, int64_t>> compared;  // nodes with collectives, bounds
  for (const ArrivalStats& a : r.per_node) {
    if (a.collectives == 0) continue;
    for (const NodeClock& c : r.clock) {
      if (c.node == a.node) compared.emplace_back(c.node, c.error_bound_ns);
    }
  }
  std::sort(compared.begin(), compared.end(),
            [](const auto& a, const auto& b) { return rs::cli::NaturalLess(a.first, b.first); });
  if (compared.size() < 2) return;  // one node: nothing compared across clocks
  const bool waits_view = r.timing.device_collectives > 0;
  std::vector<Dependent> dependents;
  for (size_t i = 0; i < r.stragglers.size(); ++i) {
    const auto lateness = ComparedLateness(r.stragglers[i], waits_view);
    if (!lateness) continue;
    Dependent d{i, *lateness, {}};
    for (const auto& [node, bound] : compared) {
      if (bound > *lateness) d.nodes.emplace_back(node, bound);
    }
    if (!d.nodes.empty()) dependents.push_back(std::move(d));
  }
  // One warning per node, naming every verdict that depends on it (before any is lowered).
  for (const auto& [node, bound] : compared) {
    std::vector<const Dependent*> mine;
    for (const Dependent& d : dependents) {
      if (std::any_of(d.nodes.begin(), d.nodes.end(),
                      [&](const auto& x) { return x.first == node; })) {
        mine.push_back(&d);
      }
    }
    if (mine.empty()) continue;
    std::string what;
    if (mine.size() == 1) {
      what = "the " + FormatNs(mine[0]->lateness_ns) + " lateness across nodes that the verdict (" +
             VerdictName(r.stragglers[mine[0]->verdict]) + ") compares";
    } else {
      what =
          "the lateness across nodes that " + std::to_string(mine.size()) + " verdicts compare (";
      for (size_t k = 0; k < mine.size(); ++k) {
        what += (k ? "; " : "") + VerdictName(r.stragglers[mine[k]->verdict]) + ": " +
                FormatNs(mine[k]->lateness_ns);
      }
      what += ")";
    }
    r.warnings.push_back(
        "node " + node + ": clock error bound +-" + FormatNs(bound) + " is larger than " + what +
        ": lateness differences inside the bound cannot be ordered, so " +
        (mine.size() == 1 ? "that verdict is" : "those verdicts are") + " at most low confidence");
  }
  for (const Dependent& d : dependents) {
    Straggler& s = r.stragglers[d.verdict];
    int64_t widest = 0;
    std::string widest_node;
    for (const auto& [node, bound] : d.nodes) {
      if (bound > widest) widest = bound, widest_node = node;
    }
    s.clock_bound_ns = std::max(s.clock_bound_ns, widest);
    if (!AtLeastMedium(s.confidence)) continue;  // already below what a verdict acts on
    const ScoreBasis basis =
        s.arrival_basis.empty() ? ScoreBasis::kNodeResource : ScoreBasis::kLateness;
    s.confidence = Confidence::kLow;
    s.confidence_score = std::min(s.confidence_score, TierScore(basis, Confidence::kLow, 1.0));
    s.summary += " (the lateness it compares across nodes, " + FormatNs(d.lateness_ns) +
                 ", is inside node " + widest_node + "'s clock error bound of +-" +
                 FormatNs(widest) + ")";
    Evidence e;
    e.kind = "clock";
    e.summary = "its lateness across nodes (" + FormatNs(d.lateness_ns) + ") is inside node " +
                widest_node + "'s clock error bound (+-" + FormatNs(widest) +
                "): the order of arrivals it rests on is undetermined";
    e.values = {{"clock_bound_ns", static_cast<double>(widest)},
                {"compared_lateness_ns", static_cast<double>(d.lateness_ns)}};
    s.evidence.push_back(std::move(e));
  }
}

}  // namespace rs::analyzer
