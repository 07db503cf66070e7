#include "analyzer/clock_bounds.h"

#include <algorithm>
#include <map>

#include "rscore/schema.h"

namespace rs::analyzer {
namespace {

// The kernel's sync error estimate per node, widened by the reference pair's own read span.
rs::Result<std::map<std::string, int64_t>> RefBounds(rs::Db& db) {
  std::map<std::string, int64_t> out;
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT node, MAX(COALESCE(maxerror_us, 0)) * 1000 + "
                              "MAX(read_span_ns) FROM clock_refs GROUP BY node"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out[st.Text(0)] = st.Int(1);
  }
  return out;
}

}  // namespace

rs::Result<std::vector<NodeClock>> LoadClocks(rs::Db& db, bool merged,
                                              std::vector<std::string>& notes) {
  std::vector<NodeClock> out;
  ASSIGN_OR_RETURN(auto ref_bounds, RefBounds(db));
  std::map<std::string, bool> seen;
  if (merged) {
    // clock_alignment.evidence came with a later merge (nullable, same schema version).
    ASSIGN_OR_RETURN(bool has_evidence, rs::HasColumn(db, "clock_alignment", "evidence"));
    ASSIGN_OR_RETURN(
        rs::Statement st,
        db.Prepare(std::string("SELECT node, offset_ns, error_bound_ns, method,"
                               " rendezvous_count, ") +
                   (has_evidence ? "evidence" : "NULL") + " FROM clock_alignment ORDER BY node"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      NodeClock c{st.Text(0), st.Int(1), st.Int(2),
                  st.Text(3), st.Int(4), st.IsNull(5) ? "" : st.Text(5)};
      seen[c.node] = true;
      out.push_back(std::move(c));
    }
  }
  // Nodes with events but no alignment row: their clock is as recorded.
  ASSIGN_OR_RETURN(rs::Statement nodes,
                   db.Prepare("SELECT DISTINCT node FROM nccl_events UNION "
                              "SELECT node FROM clock_refs UNION SELECT node FROM interfaces"
                              " ORDER BY 1"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, nodes.Step());
    if (!row) break;
    std::string node = nodes.Text(0);
    if (seen.count(node)) continue;
    auto it = ref_bounds.find(node);
    NodeClock c{node, 0, it == ref_bounds.end() ? 0 : it->second, "as_recorded", 0, ""};
    if (merged) {
      notes.push_back("node " + node +
                      " has no clock_alignment row: its timestamps are compared as recorded");
    }
    if (it == ref_bounds.end()) {
      notes.push_back("node " + node +
                      " has no clock references: its clock error bound is unknown (taken as 0)");
    }
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(),
            [](const NodeClock& a, const NodeClock& b) { return a.node < b.node; });
  return out;
}

int64_t PairBound(const std::vector<NodeClock>& clocks, const std::string& a,
                  const std::string& b) {
  if (a == b) return 0;
  int64_t ba = 0, bb = 0;
  for (const NodeClock& c : clocks) {
    if (c.node == a) ba = c.error_bound_ns;
    if (c.node == b) bb = c.error_bound_ns;
  }
  return ba + bb;
}

}  // namespace rs::analyzer
