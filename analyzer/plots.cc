#include "analyzer/plots.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

#include "rscore/cli.h"

namespace rs::analyzer {
namespace {

std::vector<NodeSeries> ToSeries(const std::map<std::string, std::map<int64_t, double>>& m,
                                 const Plots& p) {
  std::vector<NodeSeries> out;
  for (const auto& [node, bins] : m) {
    NodeSeries s{node, {}};
    for (const auto& [bin, v] : bins) s.points.emplace_back(p.from_ns + bin * p.bin_ns, v);
    out.push_back(std::move(s));
  }
  // Legends and colours in natural node order (node2 before node10), as every list of nodes.
  std::stable_sort(out.begin(), out.end(), [](const NodeSeries& a, const NodeSeries& b) {
    return rs::cli::NaturalLess(a.node, b.node);
  });
  return out;
}

}  // namespace

Plots BuildPlots(const CollectiveData& data, const SideEvents& side, int64_t start_ns,
                 int64_t end_ns) {
  Plots p;
  p.time_zero_ns = start_ns;
  // The window the plots span: the matched collectives, from the first entry or arrival to the
  // last completion, or to the recording's end while one is still in flight (a hang: the stall
  // is what the plots must show); the whole recording where there are none.
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (const Collective& g : data.collectives) {
    if (!g.matched()) continue;
    lo = std::min({lo, g.first_entry, g.first_arrival});
    hi = std::max({hi, g.last_arrival, g.last_exit, g.done, g.last_exit < 0 ? end_ns : hi});
  }
  if (lo >= hi) lo = start_ns, hi = end_ns;
  p.bins = kPlotBins;
  p.from_ns = lo - start_ns;
  p.bin_ns = std::max<int64_t>(1, (hi - lo + kPlotBins - 1) / kPlotBins);
  // Column of a time; -1 outside the window (not drawn).
  auto bin_of = [&](int64_t ts) -> int64_t {
    if (ts < lo) return -1;
    int64_t b = (ts - lo) / p.bin_ns;
    return b < kPlotBins ? b : -1;
  };
  p.columns.assign(kPlotBins, {});
  for (const Collective& g : data.collectives) {
    if (!g.matched()) continue;
    int64_t b = bin_of(g.first_arrival);
    if (b < 0) continue;
    BinCollectives& col = p.columns[b];
    const std::string& op = data.calls[g.begin].op;
    if (("/" + col.ops + "/").find("/" + op + "/") == std::string::npos) {
      col.ops += (col.ops.empty() ? "" : "/") + op;
    }
    col.first_seq = col.first_seq < 0 ? g.seq : std::min(col.first_seq, g.seq);
    col.last_seq = std::max(col.last_seq, g.seq);
    ++col.count;
  }
  std::vector<size_t> order(data.participants.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Participant &x = data.participants[a], &y = data.participants[b];
    return RankOrderLess(x.node, x.rank, x.pid, y.node, y.rank, y.pid);
  });
  std::vector<size_t> row_of(order.size());
  for (size_t r = 0; r < order.size(); ++r) {
    row_of[order[r]] = r;
    const Participant& who = data.participants[order[r]];
    p.lateness.rows.push_back(who.Label());
    p.lateness.row_nodes.push_back(who.node);
    p.lateness.row_ranks.push_back(who.rank);
  }
  for (int b = 0; b < kPlotBins; ++b) {
    p.lateness.column_start_ns.push_back(p.from_ns + b * p.bin_ns);
  }
  p.lateness.cells.assign(order.size(), std::vector<int64_t>(kPlotBins, -1));
  p.lateness.worst.assign(order.size(), std::vector<PlotCollective>(kPlotBins));
  std::map<std::string, std::map<int64_t, std::pair<double, int64_t>>> dur;  // sum, n
  for (const Collective& g : data.collectives) {
    if (!g.compared()) continue;
    int64_t b = bin_of(g.first_arrival);
    if (b < 0) continue;
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      int64_t& cell = p.lateness.cells[row_of[c.participant]][b];
      if (c.arrival - g.first_arrival > cell) {
        cell = c.arrival - g.first_arrival;
        p.lateness.worst[row_of[c.participant]][b] = {c.op, g.seq, g.first_arrival - start_ns};
      }
      int64_t d = ComparedDuration(g, c);
      if (d >= 0) {
        auto& acc = dur[data.participants[c.participant].node][b];
        acc.first += static_cast<double>(d);
        ++acc.second;
      }
    }
  }
  std::map<std::string, std::map<int64_t, double>> mean_dur, rt, runq;
  for (const auto& [node, bins] : dur) {
    for (const auto& [b, acc] : bins) mean_dur[node][b] = acc.first / acc.second;
  }
  // What the network cause weighs (network.cc): repairs that crossed a link between nodes.
  // Tail-loss probes (a late ACK; a busy receiver sends those too) and retransmits within one
  // node would draw a fault-free node as a lossy one.
  bool any_repair = false;
  for (const Retransmit& r : side.retransmits) {
    if (!r.link_repair()) continue;
    any_repair = true;
    int64_t b = bin_of(r.ts);
    if (b < 0) continue;
    if (r.src >= 0) rt[side.nodes[r.src]][b] += r.segments;
    if (r.dst >= 0) rt[side.nodes[r.dst]][b] += r.segments;
  }
  if (any_repair) {
    for (const std::string& node : side.nodes) rt[node];  // the others' flat line
  }
  for (const auto& [key, waits] : side.runq) {
    std::vector<double> bins(kPlotBins, 0);
    std::vector<bool> used(kPlotBins, false);
    for (const RunqWait& w : waits) {
      int64_t b = bin_of(w.start);
      if (b < 0) continue;
      bins[b] += static_cast<double>(w.end - w.start);
      used[b] = true;
    }
    for (int b = 0; b < kPlotBins; ++b) {
      if (used[b]) runq[key.first][b] += bins[b];
    }
  }
  p.durations = ToSeries(mean_dur, p);
  p.retransmits = ToSeries(rt, p);
  p.runq = ToSeries(runq, p);
  return p;
}

}  // namespace rs::analyzer
