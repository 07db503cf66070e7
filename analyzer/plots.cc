#include "plots.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace analyzer {
namespace {

std::vector<NodeSeries> ToSeries(const std::map<std::string, std::map<int64_t, double>>& m,
                                 int64_t bin_ns) {
  std::vector<NodeSeries> out;
  for (const auto& [node, bins] : m) {
    NodeSeries s{node, {}};
    for (const auto& [bin, v] : bins) s.points.emplace_back(bin * bin_ns, v);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

Plots BuildPlots(const CollectiveData& data, const SideEvents& side, int64_t start_ns,
                 int64_t end_ns) {
  Plots p;
  p.time_zero_ns = start_ns;
  p.bin_ns = std::max<int64_t>(1, (end_ns - start_ns + kPlotBins - 1) / kPlotBins);
  auto bin_of = [&](int64_t ts) {
    return std::clamp<int64_t>((ts - start_ns) / p.bin_ns, 0, kPlotBins - 1);
  };
  std::vector<size_t> order(data.participants.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Participant &x = data.participants[a], &y = data.participants[b];
    return std::make_tuple(x.node, x.rank.value_or(-1), x.pid) <
           std::make_tuple(y.node, y.rank.value_or(-1), y.pid);
  });
  std::vector<size_t> row_of(order.size());
  for (size_t r = 0; r < order.size(); ++r) {
    row_of[order[r]] = r;
    p.lateness.rows.push_back(data.participants[order[r]].Label());
  }
  for (int b = 0; b < kPlotBins; ++b) p.lateness.column_start_ns.push_back(b * p.bin_ns);
  p.lateness.cells.assign(order.size(), std::vector<int64_t>(kPlotBins, -1));
  std::map<std::string, std::map<int64_t, std::pair<double, int64_t>>> dur;  // sum, n
  for (const Collective& g : data.collectives) {
    if (!g.compared()) continue;
    int64_t b = bin_of(g.first_arrival);
    for (size_t k = g.begin; k < g.end; ++k) {
      const NcclCall& c = data.calls[k];
      int64_t& cell = p.lateness.cells[row_of[c.participant]][b];
      cell = std::max(cell, c.arrival - g.first_arrival);
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
    if (r.src >= 0) rt[side.nodes[r.src]][bin_of(r.ts)] += r.segments;
    if (r.dst >= 0) rt[side.nodes[r.dst]][bin_of(r.ts)] += r.segments;
  }
  if (any_repair) {
    for (const std::string& node : side.nodes) rt[node];  // the others' flat line
  }
  for (const auto& [key, waits] : side.runq) {
    std::vector<double> bins(kPlotBins, 0);
    std::vector<bool> used(kPlotBins, false);
    for (const RunqWait& w : waits) {
      int64_t b = bin_of(w.start);
      bins[b] += static_cast<double>(w.end - w.start);
      used[b] = true;
    }
    for (int b = 0; b < kPlotBins; ++b) {
      if (used[b]) runq[key.first][b] += bins[b];
    }
  }
  p.durations = ToSeries(mean_dur, p.bin_ns);
  p.retransmits = ToSeries(rt, p.bin_ns);
  p.runq = ToSeries(runq, p.bin_ns);
  return p;
}

}  // namespace analyzer
