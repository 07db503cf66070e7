// Every node's clock on the reference's: each node by its rendezvous with the reference
// (EstimatePair, clock_alignment.cc), else through an aligned node it shares rendezvous with,
// else its wall clock bounded by the kernels' maxerror.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "merger/clock_alignment.h"

namespace rs::merge {

int64_t NodeAlignment::Apply(int64_t local_ns) const {
  int64_t out = local_ns - offset_ns;
  if (drift_ppm != 0) {
    out -= std::llround(drift_ppm * 1e-6 * static_cast<double>(local_ns - anchor_ns));
  }
  return out;
}

std::vector<NodeAlignment> AlignClocks(const std::vector<NodeClock>& nodes,
                                       const std::vector<Rendezvous>& rendezvous, int reference,
                                       const AlignOptions& opt) {
  const int n = static_cast<int>(nodes.size());
  std::vector<NodeAlignment> out(n);
  if (n == 0) return out;
  std::vector<int64_t> seen(n, 0);
  for (const Rendezvous& r : rendezvous) {
    for (const NodeObservation& o : r.nodes) {
      if (o.node >= 0 && o.node < n) ++seen[o.node];
    }
  }
  if (reference < 0 || reference >= n) {
    reference = static_cast<int>(std::max_element(seen.begin(), seen.end()) - seen.begin());
  }
  std::vector<bool> done(n, false);
  std::vector<std::string> why(n);
  for (int i = 0; i < n; ++i) {
    out[i].node = nodes[i].name;
    out[i].anchor_ns = nodes[i].start_ns;
  }
  out[reference].method = "reference";
  out[reference].rendezvous_count = seen[reference];
  out[reference].note = "offsets of the other nodes are relative to this node's clock";
  done[reference] = true;

  auto adopt = [&](int a, const PairEstimate& e, int via) {
    NodeAlignment& al = out[a];
    double offset = e.offset_ns, drift = e.drift_ppm, bound = e.error_bound_ns;
    if (via != reference) {  // compose with via's alignment, taken at a's anchor
      const NodeAlignment& b = out[via];
      offset += b.offset_ns + b.drift_ppm * 1e-6 * static_cast<double>(e.anchor_ns - b.anchor_ns);
      drift += b.drift_ppm;
      bound += b.error_bound_ns;
    }
    al.offset_ns = std::llround(offset);
    al.drift_ppm = drift;
    al.anchor_ns = e.anchor_ns;
    al.error_bound_ns = static_cast<int64_t>(std::ceil(bound));
    al.method = "rendezvous";
    al.rendezvous_count = e.count;
    al.note = e.note + (via != reference ? " (through node " + nodes[via].name + ")" : "");
    al.evidence = EvidenceSummary(e.by_evidence);
    done[a] = true;
  };

  for (int a = 0; a < n; ++a) {
    if (done[a]) continue;
    PairEstimate e =
        EstimatePair(PairConstraints(rendezvous, a, reference), nodes[a].start_ns, opt);
    if (e.usable)
      adopt(a, e, reference);
    else
      why[a] = e.note;
  }
  // Nodes without a usable estimate against the reference: through an aligned node they share
  // rendezvous with, the one with the most first.
  std::vector<std::vector<bool>> tried(n, std::vector<bool>(n, false));
  for (int a = 0; a < n; ++a) tried[a][reference] = true;
  for (bool progress = true; progress;) {
    progress = false;
    for (int a = 0; a < n; ++a) {
      if (done[a]) continue;
      std::vector<int64_t> shared(n, 0);
      for (const Rendezvous& r : rendezvous) {
        bool has_a = false;
        for (const NodeObservation& o : r.nodes) has_a |= o.node == a;
        if (!has_a) continue;
        for (const NodeObservation& o : r.nodes) {
          if (o.node != a && o.node >= 0 && o.node < n && done[o.node] && !tried[a][o.node]) {
            ++shared[o.node];
          }
        }
      }
      int via = static_cast<int>(std::max_element(shared.begin(), shared.end()) - shared.begin());
      if (shared[via] == 0) continue;
      tried[a][via] = true;
      progress = true;  // another candidate may remain
      PairEstimate e = EstimatePair(PairConstraints(rendezvous, a, via), nodes[a].start_ns, opt);
      if (e.usable) {
        adopt(a, e, via);
      } else if (why[a] == "no shared rendezvous") {
        why[a] = e.note + " (through node " + nodes[via].name + ")";
      }
    }
  }
  auto maxerr = [&](int i) {
    return nodes[i].maxerror_ns >= 0 ? nodes[i].maxerror_ns : opt.unknown_maxerror_ns;
  };
  for (int a = 0; a < n; ++a) {
    if (done[a]) continue;
    NodeAlignment& al = out[a];
    al.method = "wall_clock";
    al.offset_ns = 0;
    al.drift_ppm = 0;
    al.error_bound_ns = maxerr(a) + maxerr(reference);
    al.rendezvous_count = 0;
    al.note = why[a] +
              "; recorded wall clock kept, bounded by the kernel's maxerror of this "
              "node and the reference" +
              (nodes[a].maxerror_ns < 0 || nodes[reference].maxerror_ns < 0
                   ? " (unavailable: 16 s ceiling assumed)"
                   : "");
  }
  return out;
}

}  // namespace rs::merge
