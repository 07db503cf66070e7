#include "analyzer/rdma_links.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "analyzer/lateness_straggler.h"
#include "analyzer/report_format.h"
#include "rscore/schema.h"

namespace rs::analyzer {
namespace {

enum class Kind { kLinkError, kRetry, kCongestion, kOther };

Kind KindOf(const std::string& counter) {
  static const std::set<std::string> link = {"symbol_error",
                                             "link_error_recovery",
                                             "link_downed",
                                             "local_link_integrity_errors",
                                             "port_rcv_errors",
                                             "excessive_buffer_overrun_errors",
                                             "port_xmit_discards",
                                             "port_rcv_remote_physical_errors",
                                             "port_rcv_switch_relay_errors"};
  static const std::set<std::string> retry = {
      "out_of_sequence",     "packet_seq_err",      "local_ack_timeout_err",
      "implied_nak_seq_err", "duplicate_request",   "rnr_nak_retry_err",
      "roce_adp_retrans",    "roce_adp_retrans_to", "roce_slow_restart"};
  static const std::set<std::string> congestion = {"port_xmit_wait", "np_cnp_sent",
                                                   "rp_cnp_handled", "np_ecn_marked_roce_packets",
                                                   "out_of_buffer"};
  if (link.count(counter)) return Kind::kLinkError;
  if (retry.count(counter)) return Kind::kRetry;
  if (congestion.count(counter)) return Kind::kCongestion;
  return Kind::kOther;
}

std::string Increases(const std::vector<RdmaIncrease>& v) {
  std::string out;
  for (const RdmaIncrease& i : v) {
    out += (out.empty() ? "" : ", ") + i.counter + " +" + std::to_string(i.increase);
  }
  return out;
}

void Sort(std::vector<RdmaIncrease>& v) {
  std::stable_sort(v.begin(), v.end(), [](const RdmaIncrease& a, const RdmaIncrease& b) {
    return a.increase > b.increase;
  });
}

// The windows' union, sorted: whether [from, to] overlaps one.
bool Overlaps(const std::vector<std::pair<int64_t, int64_t>>& windows, int64_t from, int64_t to) {
  auto it = std::lower_bound(windows.begin(), windows.end(), std::make_pair(from, INT64_MIN),
                             [](const auto& w, const auto& key) { return w.second < key.first; });
  return it != windows.end() && it->first < to;
}

}  // namespace

int64_t RdmaPortErrors::Errors() const {
  int64_t n = 0;
  for (const auto* v : {&link_errors, &retries}) {
    for (const RdmaIncrease& i : *v) n += i.increase;
  }
  return n;
}

std::string RdmaPortErrors::Label() const {
  std::string s = node + " " + device + " port " + std::to_string(port);
  std::string what = link_layer;
  if (!netdev.empty()) what += (what.empty() ? "" : ", ") + netdev;
  return what.empty() ? s : s + " (" + what + ")";
}

rs::Result<RdmaLinks> LoadRdmaLinks(rs::Db& db, const CollectiveData& data) {
  RdmaLinks out;
  ASSIGN_OR_RETURN(bool has_ports, rs::HasTable(db, "rdma_ports"));
  ASSIGN_OR_RETURN(bool has_counters, rs::HasTable(db, "rdma_counters"));
  if (!has_ports || !has_counters) return out;
  using Key = std::tuple<std::string, std::string, int64_t>;  // node, device, port
  std::map<Key, RdmaPortErrors> ports;
  std::set<std::string> nodes;
  {
    ASSIGN_OR_RETURN(rs::Statement st,
                     db.Prepare("SELECT node, device, port, link_layer, netdev FROM rdma_ports"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      RdmaPortErrors p;
      p.node = st.Text(0);
      p.device = st.Text(1);
      p.port = st.Int(2);
      p.link_layer = st.IsNull(3) ? "" : st.Text(3);
      p.netdev = st.IsNull(4) ? "" : st.Text(4);
      nodes.insert(p.node);
      ports.emplace(Key{p.node, p.device, p.port}, std::move(p));
    }
  }
  out.ports = static_cast<int64_t>(ports.size());
  out.nodes = static_cast<int64_t>(nodes.size());
  std::map<Key, std::map<std::string, int64_t>> totals;
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT node, device, port, counter, delta, since_ns, timestamp_ns "
                              "FROM rdma_counters WHERE delta > 0 ORDER BY timestamp_ns"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    const Key key{st.Text(0), st.Text(1), st.Int(2)};
    auto it = ports.find(key);
    if (it == ports.end()) continue;  // a port not described: not this recording's
    const std::string counter = st.Text(3);
    const Kind kind = KindOf(counter);
    if (kind == Kind::kOther) continue;
    totals[key][counter] += st.Int(4);
    if (kind == Kind::kCongestion || st.IsNull(5)) continue;
    it->second.windows.emplace_back(st.Int(5), st.Int(6));
  }
  for (auto& [key, counters] : totals) {
    RdmaPortErrors& p = ports.at(key);
    for (const auto& [counter, increase] : counters) {
      const Kind kind = KindOf(counter);
      auto& list = kind == Kind::kLinkError ? p.link_errors
                   : kind == Kind::kRetry   ? p.retries
                                            : p.congestion;
      list.push_back({counter, increase});
    }
    for (auto* v : {&p.link_errors, &p.retries, &p.congestion}) Sort(*v);
    if (p.Errors() == 0) continue;
    // The windows in time order, merged where they touch.
    std::sort(p.windows.begin(), p.windows.end());
    std::vector<std::pair<int64_t, int64_t>> merged;
    for (const auto& w : p.windows) {
      if (!merged.empty() && w.first <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, w.second);
      } else {
        merged.push_back(w);
      }
    }
    p.windows = std::move(merged);
    p.transfers = CompareTransfers(
        data, [&p](const Collective& g) { return Overlaps(p.windows, g.last_arrival, g.done); });
    out.with_errors.push_back(std::move(p));
  }
  std::stable_sort(
      out.with_errors.begin(), out.with_errors.end(),
      [](const RdmaPortErrors& a, const RdmaPortErrors& b) { return a.Errors() > b.Errors(); });
  return out;
}

Cause RdmaCause(const RdmaPortErrors& p) {
  const TransferComparison& t = p.transfers;
  Cause c;
  c.kind = "network";
  const double share = t.collectives ? static_cast<double>(t.affected) / t.collectives : 0;
  c.score = t.slowed ? std::max(0.5, share) : 0.25 * share;
  c.summary = "RDMA " + p.Label() + ": ";
  std::vector<std::string> parts;
  if (!p.link_errors.empty()) parts.push_back("link errors " + Increases(p.link_errors));
  if (!p.retries.empty()) parts.push_back("transport retries " + Increases(p.retries));
  for (size_t i = 0; i < parts.size(); ++i) c.summary += (i ? "; " : "") + parts[i];
  c.summary += " during " + std::to_string(t.affected) + " of " + std::to_string(t.collectives) +
               " collectives";
  if (t.median_affected_ns >= 0) {
    c.summary += "; median time from last arrival to completion " + FormatNs(t.median_affected_ns) +
                 " in those";
    if (t.median_clean_ns >= 0)
      c.summary += " vs " + FormatNs(t.median_clean_ns) + " in the others";
    if (t.stretch_affected >= 0) {
      c.summary += " (" + FormatRatio(t.stretch_affected) + " the usual for their size)";
    }
  }
  if (t.too_few_to_tell) {
    c.summary += "; too few to tell whether they were slowed";
  } else if (t.affected > 0 && !t.slowed) {
    c.summary += "; they took no longer than the others";
  }
  c.remediation = "check the cable, transceiver and switch port of " + p.node + " " + p.device +
                  " port " + std::to_string(p.port) +
                  ": ibstat or ibv_devinfo -v (state, rate), perfquery -x (the port's counters, "
                  "and its switch peer's), mlxlink -d " +
                  p.device + " (cable, BER, FEC on Mellanox/NVIDIA adapters)";
  c.values = {{"link_errors_and_retries", static_cast<double>(p.Errors())},
              {"collectives_during_them", static_cast<double>(t.affected)},
              {"median_transfer_during_ns", static_cast<double>(t.median_affected_ns)},
              {"median_transfer_others_ns", static_cast<double>(t.median_clean_ns)}};
  return c;
}

Evidence RdmaEvidence(const RdmaPortErrors& p) {
  Evidence e;
  e.kind = "rdma_counters";
  e.summary = "RDMA " + p.Label() + " (rdma_counters): ";
  std::vector<std::string> parts;
  if (!p.link_errors.empty()) parts.push_back("link errors " + Increases(p.link_errors));
  if (!p.retries.empty()) parts.push_back("transport retries " + Increases(p.retries));
  if (!p.congestion.empty()) {
    parts.push_back("congestion counters (they rise under ordinary load too) " +
                    Increases(p.congestion));
  }
  for (size_t i = 0; i < parts.size(); ++i) e.summary += (i ? "; " : "") + parts[i];
  int64_t window_ns = 0;
  for (const auto& [from, to] : p.windows) window_ns += to - from;
  e.summary += "; link errors or retries rose in " + std::to_string(p.windows.size()) +
               " stretch(es) of readings, " + FormatNs(window_ns) + " in all";
  e.values = {{"link_errors_and_retries", static_cast<double>(p.Errors())},
              {"windows", static_cast<double>(p.windows.size())}};
  return e;
}

Straggler RdmaStraggler(const RdmaPortErrors& p) {
  const TransferComparison& t = p.transfers;
  Straggler s;
  s.node = p.node;
  s.shape = "network";
  // Slowed collectives during the errors: a medium verdict (a reading's window is a second
  // wide, so which collective an error hit is not known more closely); else a hint.
  s.confidence = t.slowed ? Confidence::kMedium : Confidence::kLow;
  const double share = t.collectives ? static_cast<double>(t.affected) / t.collectives : 0;
  s.confidence_score = TierScore(ScoreBasis::kNetwork, s.confidence, share);
  s.basis =
      "RDMA port counters (sysfs, read about once a second: rdma_counters) against the "
      "collectives whose data moved in the readings' windows; collective windows from the last "
      "arrival to completion";
  Cause cause = RdmaCause(p);
  s.cause = cause.kind;
  s.summary = t.slowed ? p.node +
                             ": collectives slowed during link errors or transport retries "
                             "on RDMA " +
                             p.device + " port " + std::to_string(p.port)
                       : p.node + ": link errors or transport retries on RDMA " + p.device +
                             " port " + std::to_string(p.port) +
                             " explain no lateness (the collectives during them took no longer)";
  s.causes.push_back(std::move(cause));
  s.evidence.push_back(RdmaEvidence(p));
  return s;
}

void PlaceRdmaFindings(const RdmaLinks& links, std::vector<Straggler>& ranked,
                       std::vector<Straggler>& observed, std::vector<std::string>& notes) {
  if (links.ports == 0) return;
  if (links.with_errors.empty()) {
    notes.push_back("RDMA: " + std::to_string(links.ports) + " port(s) on " +
                    std::to_string(links.nodes) +
                    " node(s) recorded; no link error or transport retry counter rose during "
                    "the recording");
    return;
  }
  std::set<std::string> placed;
  for (const RdmaPortErrors& p : links.with_errors) {
    if (!placed.insert(p.node).second) continue;  // the port with the most errors per node
    auto same = std::find_if(ranked.begin(), ranked.end(), [&](const Straggler& s) {
      return s.node == p.node && s.ordering_determined;
    });
    if (same != ranked.end()) {
      same->evidence.push_back(RdmaEvidence(p));
      if (p.transfers.slowed) {
        same->causes.push_back(RdmaCause(p));
        SetTopCause(*same);
      }
      continue;
    }
    Straggler s = RdmaStraggler(p);
    (p.transfers.slowed ? ranked : observed).push_back(std::move(s));
  }
  notes.push_back("RDMA: " + std::to_string(links.ports) + " port(s) on " +
                  std::to_string(links.nodes) +
                  " node(s) recorded; link errors or transport "
                  "retries on " +
                  std::to_string(links.with_errors.size()) + " of them");
}

}  // namespace rs::analyzer
