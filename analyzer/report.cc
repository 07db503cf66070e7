#include "analyzer/report.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "analyzer/call_semantics.h"
#include "analyzer/causes.h"
#include "analyzer/clock_bounds.h"
#include "analyzer/collectives.h"
#include "analyzer/confidence.h"
#include "analyzer/device_arrival.h"
#include "analyzer/fr_hang.h"
#include "analyzer/group_straggler.h"
#include "analyzer/hang.h"
#include "analyzer/hang_activity.h"
#include "analyzer/lateness_straggler.h"
#include "analyzer/network.h"
#include "analyzer/plots.h"
#include "analyzer/proxy_waits.h"
#include "analyzer/rdma_links.h"
#include "analyzer/recorded_wait_input.h"
#include "analyzer/report_format.h"
#include "analyzer/report_notes.h"
#include "analyzer/report_verdict.h"
#include "analyzer/report_warnings.h"
#include "analyzer/side_events.h"
#include "analyzer/straggler.h"

#include "rscore/cli.h"
#include "rscore/duration.h"
#include "rscore/schema.h"

namespace rs::analyzer {
namespace {

// A node whose ranks wait for a CPU also sends its ACKs and segments late: the kernel's
// retransmission timeouts then fire without any packet lost. Where run-queue waits
// explain its lateness, its retransmits are counted as their consequence, the network cause
// keeping only the share the CPU does not explain.
void DiscountNetworkUnderCpu(Straggler& s) {
  auto cpu = std::find_if(s.causes.begin(), s.causes.end(),
                          [](const Cause& c) { return c.kind == "cpu_contention"; });
  if (cpu == s.causes.end() || cpu->score < 0.25) return;
  double cpu_score = cpu->score;
  bool changed = false;
  for (Cause& c : s.causes) {
    if (c.kind != "network") continue;
    c.score *= 1.0 - cpu_score;
    c.summary += "; its ranks' run-queue waits explain " + FormatPercent(cpu_score) +
                 " of its lateness, so these retransmits are likely a consequence of CPU "
                 "starvation (late ACKs expire retransmission timers)";
    changed = true;
  }
  if (!changed) return;
  SetTopCause(s);
}

// Describes what the hang's culprits and (a few of) the ranks waiting for them were doing.
rs::Result<void> DescribeHangRanks(rs::Db& db, const CollectiveData& data,
                                   const std::vector<std::vector<CudaWait>>& cuda_in_flight,
                                   HangReport& hang) {
  constexpr size_t kWaitingDescribed = 8;
  size_t waiting = 0;
  for (RankProgress& p : hang.progress) {
    auto it = data.participant_index.find({p.node, p.pid});
    if (it == data.participant_index.end()) continue;
    const Participant& who = data.participants[it->second];
    bool culprit = std::find(hang.culprit_labels.begin(), hang.culprit_labels.end(), who.Label()) !=
                   hang.culprit_labels.end();
    if (!culprit && waiting++ >= kWaitingDescribed) continue;
    RETURN_IF_ERROR(DescribeActivity(db, who, cuda_in_flight[it->second], p));
  }
  return rs::Ok();
}

// Who a finding is about: a node-level one lists its node's ranks and processes and carries at
// least its node's clock bound; a rank-level one its process. Where a cause is CPU contention,
// the processes that took the CPUs; the collectives it arrived last in.
void NameWho(Straggler& s, const CollectiveData& data, const SideEvents& side,
             const std::vector<NodeClock>& clocks) {
  if (s.node.empty()) return;  // a hang culprit no recording saw: nothing known of it
  if (s.pid) {
    s.pids = {*s.pid};
  } else if (!s.rank) {
    std::vector<std::pair<int64_t, int64_t>> mine;  // (rank or -1, pid)
    for (const Participant& p : data.participants) {
      if (p.node == s.node) mine.push_back({p.rank.value_or(-1), p.pid});
    }
    std::sort(mine.begin(), mine.end());
    s.pids.clear();
    bool ranks_given = !s.ranks.empty();
    for (const auto& [rank, pid] : mine) {
      s.pids.push_back(pid);
      if (!ranks_given && rank >= 0) s.ranks.push_back(rank);
    }
    for (const NodeClock& c : clocks) {
      if (c.node == s.node) s.clock_bound_ns = std::max(s.clock_bound_ns, c.error_bound_ns);
    }
  }
  bool cpu = std::any_of(s.causes.begin(), s.causes.end(),
                         [](const Cause& c) { return c.kind == "cpu_contention"; });
  if (cpu) s.competitors = CpuCompetitors(side, data, s.node, s.pids);
  if (s.cause != "hang") FindLateArrivals(s, data);
}

// The recording's span and what it is, from the file's metadata.
void ReadSpan(const rs::OpenedDb& opened, Report& r) {
  r.input = opened.source_path();
  r.db_kind = opened.info().db_kind;
  r.start_ns = opened.info().start_ns;
  r.end_ns = opened.info().end_ns;
  // Not required in a merged db's metadata, so not in BundleInfo.
  for (const char* key : {"start_ns", "end_ns"}) {
    auto it = opened.info().metadata.find(key);
    if (it == opened.info().metadata.end()) continue;
    int64_t v = std::strtoll(it->second.c_str(), nullptr, 10);
    if (std::string(key) == "start_ns" && r.start_ns == 0) r.start_ns = v;
    if (std::string(key) == "end_ns" && r.end_ns == 0) r.end_ns = v;
  }
}

// The collectives, the span they widen, the calls' semantics and the arrivals they imply.
rs::Result<CollectiveData> LoadTiming(rs::Db& db, Report& r, CallSemantics& sem) {
  ASSIGN_OR_RETURN(CollectiveData data, LoadComparedCollectives(db, r.clock, &sem));
  r.nccl_calls = static_cast<int64_t>(data.calls.size());
  r.collectives = data.matched;
  for (const NcclCall& c : data.calls) {
    r.end_ns = std::max(r.end_ns, c.in_flight() ? c.ts : c.ts + c.dur);
    if (c.device) {
      r.end_ns = std::max(r.end_ns, c.device->end_ns.value_or(c.device->start_ns.value_or(0)));
    }
    if (r.start_ns == 0 || c.ts < r.start_ns) r.start_ns = c.ts;
  }
  if (data.device_collectives_set_aside > 0) {
    r.notes.push_back(
        "the NCCL calls here block until their collective is done: arrivals are host entries "
        "(the profiler plugin's device times were recorded too, but a blocking call's entry is "
        "the arrival, free of the device clock's conversion bound)");
  }
  AddTimingNotes(data, sem, r);
  return data;
}

// Nodes and ranks, and notes on what the collectives alone can tell.
void TakeInventory(const CollectiveData& data, Report& r) {
  std::set<std::string> nodes;
  for (const NodeClock& c : r.clock) nodes.insert(c.node);
  for (const Participant& p : data.participants) nodes.insert(p.node);
  r.nodes.assign(nodes.begin(), nodes.end());
  std::set<int64_t> ranks;
  int64_t unranked = 0;
  for (const Participant& p : data.participants) {
    if (p.rank)
      ranks.insert(*p.rank);
    else
      ++unranked;
  }
  r.ranks = static_cast<int64_t>(ranks.size()) + unranked;
  if (unranked > 0) {
    r.notes.push_back(std::to_string(unranked) +
                      " process(es) calling collectives have no known rank; they are named by "
                      "pid");
  }
  if (data.calls.empty() && r.unidentified_calls == 0) {
    r.notes.push_back(
        "no NCCL collectives (with communicator and sequence number) were "
        "recorded: check that the NCCL probe attached (query the attachments "
        "table) and that the job ran while recording");
  } else if (data.matched == 0) {
    r.notes.push_back(
        "collectives were recorded but none was seen by two or more ranks: "
        "lateness needs every rank's bundle (merge all nodes' bundles)");
  }
  if (r.nodes.size() == 1 && !data.participants.empty()) {
    r.notes.push_back("one node only (" + r.nodes.front() +
                      "): lateness compares its ranks with each other; merge all nodes' "
                      "bundles to compare nodes");
  }
}

// Several communicators per rank: the wait-for graph over all of them (recorded_wait_input.h,
// wait_graph.h) is the hang wherever it finds one, in place of the one-communicator verdict or
// where that found none (a hang held in sends and receives). false (and why_not) where it
// cannot be built or finds none.
rs::Result<bool> HangAcrossGroups(rs::Db& db, const CollectiveData& data, Report& r,
                                  std::string* why_not) {
  const std::vector<RecordedP2p> p2p = RecordedP2ps(data);
  ASSIGN_OR_RETURN(std::set<std::string> lossy, LoadLossyNodes(db));
  std::optional<FrJob> job = RecordedJob(data, p2p, lossy, r.end_ns, why_not);
  if (!job) return false;
  const wait::Result res = wait::Analyze(job->input);
  // The states' basis: the one-communicator analysis's where it found the hang too.
  const bool enqueues = std::all_of(data.calls.begin(), data.calls.end(),
                                    [](const NcclCall& c) { return c.enqueue; });
  const std::string basis = r.hang.detected       ? r.hang.basis
                            : data.device_ops > 0 ? "device"
                            : enqueues            ? "host_enqueue"
                                                  : "host_call";
  const EngineSource src{"recording", "the recorded collectives of", basis};
  HangReport h = EngineHang(*job, res, src);
  if (!h.detected) {
    *why_not = "the wait-for graph over every communicator finds no hang: " + h.summary;
    // A send and its receive that differ need not hang (NCCL 2.28.9: a float64 receive of a
    // float32 send completed, the job went on with wrong data): said all the same.
    for (Mismatch& m : h.mismatches) {
      if (!m.sender) continue;
      r.notes.push_back("rank " + std::to_string(*m.receiver) + "'s receive of transfer " +
                        std::to_string(m.seq) + " from rank " + std::to_string(*m.sender) +
                        " passed another " + m.field + " than the send (see the mismatches): " +
                        "NCCL checks neither, so the data it received is not what was sent");
      r.hang.mismatches.push_back(std::move(m));
    }
    return false;
  }
  r.notes.insert(r.notes.end(), res.notes.begin(), res.notes.end());
  r.hang = std::move(h);
  return true;
}

// Beside a hang the recording's tail is the stall, and the ranks that wait in it spin: CUDA's
// default synchronization spins or yields on the host, NCCL's proxy threads poll, and the
// waiting ranks enter nothing, so lateness and run-queue findings over that tail describe the
// stall. Seen on the multi-group test bed: a CPU-contention finding of medium confidence on the
// node of ranks that only waited (crash2, mismatch1), beside the hang's right culprits. Such
// findings drop to low confidence, which makes them observations (Report::observations), with a
// note; the hang's culprits are the verdict.
void CapBesideHang(Report& r) {
  std::vector<std::string> capped;
  std::vector<Straggler> kept;
  for (Straggler& s : r.stragglers) {
    if (s.cause == "hang") {
      kept.push_back(std::move(s));
      continue;
    }
    if (AtLeastMedium(s.confidence)) {
      s.confidence = Confidence::kLow;
      s.confidence_score =
          std::min(s.confidence_score, TierScore(ScoreBasis::kLateness, Confidence::kLow, 1.0));
      capped.push_back(s.node + (s.rank ? " rank " + std::to_string(*s.rank) : "") + " (" +
                       s.cause + ")");
    }
    // Low confidence beside a hang, capped here or not: an observation, like any other.
    r.observations.push_back(std::move(s));
  }
  r.stragglers = std::move(kept);
  if (capped.empty()) return;
  std::string who;
  for (const std::string& c : capped) who += (who.empty() ? "" : ", ") + c;
  r.notes.push_back(
      "beside the hang, the other findings (" + who +
      ") are capped at low and listed as observations: the recording holds the stall, in which "
      "the waiting ranks spin in their synchronizations and enter nothing, and its CPU load and "
      "last collectives are counted in them; rank them after the hang, or look at a recording "
      "that ends before it");
}

// The hang analysis; its culprits head the findings.
rs::Result<void> AddHang(rs::Db& db, const CollectiveData& data, Report& r) {
  ASSIGN_OR_RETURN(auto cuda_in_flight, LoadCudaInFlight(db, data));
  r.hang = AnalyzeHang(data, cuda_in_flight, r.end_ns);
  // data.calls are ordered by communicator: a participant's calls of one communicator are
  // contiguous among its own, so counting changes of communicator counts them once each.
  std::vector<std::optional<uint64_t>> last_comm(data.participants.size());
  std::vector<int64_t> comms(data.participants.size(), 0);
  for (const NcclCall& c : data.calls) {
    const auto p = static_cast<size_t>(c.participant);
    if (last_comm[p] == c.comm) continue;
    last_comm[p] = c.comm;
    r.comms_per_rank = std::max(r.comms_per_rank, ++comms[p]);
  }
  const bool multi_group = r.comms_per_rank > 1;
  std::string why_not;
  bool across = false;
  if (multi_group) {
    // Every communicator's collectives, sends and receives as one wait-for graph: it also
    // finds a hang held in sends and receives alone, which the analysis of each
    // communicator's collectives cannot see.
    ASSIGN_OR_RETURN(across, HangAcrossGroups(db, data, r, &why_not));
  }
  if (r.hang.detected) {
    RETURN_IF_ERROR(DescribeHangRanks(db, data, cuda_in_flight, r.hang));
    if (across) {
      for (size_t i = 0; i < r.hang.culprit_ranks.size(); ++i) {
        r.stragglers.push_back(EngineStraggler(
            r.hang, i,
            "the recorded NCCL collectives of every communicator (device states from rankscope's "
            "profiler plugin where recorded), as a wait-for graph whose chains end at this rank"));
      }
      r.notes.push_back(
          "the ranks of this job call collectives in up to " + std::to_string(r.comms_per_rank) +
          " communicators each: the hang is the wait-for graph over all of them (a rank waiting "
          "in a collective waits for the members that have not reached it), whose chains end at "
          "the culprits");
    } else if (multi_group) {
      // A rank stuck in one group may only wait for another group's laggard: the chain across
      // groups is the hang engine's (wait_graph.h), run on Flight Recorder dumps where merged.
      r.hang.confidence = Confidence::kLow;
      r.warnings.push_back(
          "the ranks of this job call collectives in up to " + std::to_string(r.comms_per_rank) +
          " communicators each (tensor-, pipeline-, data- or expert-parallel groups), and the "
          "recording's hang analysis looks at one communicator and its collectives: the ranks it "
          "names (communicator ranks) may only be waiting for a rank of another group; confidence "
          "low (" +
          why_not +
          "). With every rank's PyTorch Flight Recorder dump merged beside the bundles, the "
          "verdict across every group (the dumps') is shown instead");
    }
    for (size_t i = 0; i < r.hang.culprit_labels.size() && !across; ++i) {
      r.stragglers.push_back(HangStraggler(r.hang, data, i));
      if (multi_group) {
        r.stragglers.back().confidence = Confidence::kLow;
        r.stragglers.back().confidence_score = TierScore(ScoreBasis::kHang, Confidence::kLow, 0);
      }
    }
    if (r.hang.basis == "host_enqueue") {
      r.notes.push_back(
          "hang found without device-side state (no profiler plugin data): the culprits are the "
          "ranks that never enqueued the collective the others enqueued and wait for in blocking "
          "CUDA calls; confidence medium");
    }
  }
  return rs::Ok();
}

// The rank or node whose arrivals stand out: on arrival times where the clocks can order
// them, else on the device waits (each read on one device clock). *on_waits: found on the
// waits, whose statistics are then its lateness statistics.
LatenessCandidate FindLateness(const CollectiveData& data, const std::vector<ArrivalStats>& stats,
                               const std::vector<ArrivalStats>& wait_stats, const Report& r,
                               bool* on_waits) {
  *on_waits = false;
  LatenessCandidate lc = FindLatenessStraggler(data, stats, r.per_node, r.clock);
  // Measured barrier waits tell the lateness itself: a rank the device starts single out inside
  // their bounds is not confirmed by them (any positive median would), it is looked for on them.
  if (!lc.determined && lc.participant >= 0 && data.device_collectives > 0 &&
      data.barrier_collectives == 0) {
    // Device starts single it out but cannot order it within their bounds: the device waits,
    // read on each device's own clock, may.
    LatenessCandidate ordered = lc;
    ordered.waits = OrderByWaits(data, lc.participant, lc.node_level);
    ordered.by_waits = true;
    ordered.determined = ordered.waits.determined;
    RateCandidate(ordered);
    if (ordered.determined) lc = ordered;
  }
  if (!lc.determined && data.device_collectives > 0) {
    // Nobody stands out on device starts, or the waits deny the one who does (a node aligned
    // off inside its bound looks late there): look for the straggler on the waits themselves.
    LatenessCandidate wc = FindLatenessStraggler(data, wait_stats, AsWaitStats(r.per_node), {},
                                                 /*clock_free=*/true);
    if (wc.participant >= 0) {
      wc.waits = OrderByWaits(data, wc.participant, wc.node_level);
      wc.by_waits = wc.found_on_waits = true;
      wc.determined = wc.waits.determined;
      wc.bound_ns = lc.participant >= 0 ? lc.bound_ns : 0;
      RateCandidate(wc);
      if (wc.determined) {
        lc = wc;
        *on_waits = true;
      }
    }
  }
  return lc;
}

// Beside a confident verdict, a low-confidence network finding about another node is a hint
// (a few slower collectives with retransmits), not a second verdict.
void DemoteNetworkHints(std::vector<Straggler>& ranked, std::vector<Straggler>& observed) {
  auto confident = [](const Straggler& x) { return AtLeastMedium(x.confidence); };
  if (std::any_of(ranked.begin(), ranked.end(), confident)) {
    std::vector<Straggler> kept;
    for (Straggler& x : ranked) {
      const bool hint = x.cause == "network" && !confident(x) &&
                        std::none_of(ranked.begin(), ranked.end(), [&](const Straggler& y) {
                          return confident(y) && y.node == x.node;
                        });
      (hint ? observed : kept).push_back(std::move(x));
    }
    ranked = std::move(kept);
  }
}

// The resource findings (retransmits, block latency, run-queue share) beside the lateness
// finding in `ranked`: a verdict where its node is also later than the others (then in
// `ranked`), else an observation (returned).
std::vector<Straggler> PlaceResourceFindings(const CollectiveData& data, const SideEvents& side,
                                             const LatenessCandidate& lc, Report& r,
                                             std::vector<Straggler>& ranked) {
  NetworkCandidate nc = AttributeRetransmits(side, data);
  // Node-level lateness behind the resource stragglers: on device recordings the clock-free
  // device waits (alignment and conversion bounds there are often wider than the lateness).
  const bool waits_view = data.device_collectives > 0;
  const std::vector<ArrivalStats> node_view = waits_view ? AsWaitStats(r.per_node) : r.per_node;
  const std::string view_basis =
      waits_view ? "device waits (the longest device duration in a collective minus its own, "
                   "each on one device clock)"
                 : "host-side NCCL call entry times";
  IoCandidate ic = AttributeBlockLatency(side, data, node_view);
  ic.lateness_basis = view_basis;
  if (nc.node.empty() && nc.segments_probe > 0) {
    r.notes.push_back(std::to_string(nc.segments_probe) +
                      " retransmitted segments between nodes were all tail-loss probes (sent "
                      "because an ACK was late: a busy receiver causes them as well as a lost "
                      "packet); without fast or timeout retransmits no node's link is blamed");
  }
  // Findings that explain no measured lateness: shown apart (Report::observations).
  std::vector<Straggler> observed;
  // A lateness finding whose ordering the clocks could not decide names its node only until a
  // clock-free resource finding about that node (block latency, run-queue share, retransmits)
  // takes its place as the verdict; its clock evidence stays with the new verdict.
  auto undecided = [](const std::string& node) {
    return [&node](const Straggler& s) { return s.node == node && !s.ordering_determined; };
  };
  auto named = [&](const std::string& node) {
    auto on = [&](const Straggler& s) { return s.node == node; };
    return std::any_of(ranked.begin(), ranked.end(),
                       [&](const Straggler& s) { return on(s) && !undecided(node)(s); }) ||
           std::any_of(observed.begin(), observed.end(), on);
  };
  auto place = [&](Straggler s, bool verdict) {
    auto old = std::find_if(ranked.begin(), ranked.end(), undecided(s.node));
    if (!verdict) {
      // Not a verdict, and its node already has one (undecided): not named twice.
      if (old == ranked.end()) observed.push_back(std::move(s));
      return;
    }
    if (old == ranked.end()) {
      ranked.push_back(std::move(s));
      return;
    }
    for (Evidence& e : old->evidence) {
      if (e.kind == "clock") s.evidence.push_back(std::move(e));
    }
    if (!waits_view && AtLeastMedium(s.confidence)) {
      // Its lateness, read from host entries across nodes, is what the clocks left undecided:
      // the resource is measured, whether it made the node late is not.
      s.confidence = Confidence::kUndetermined;
      s.confidence_score = std::min(s.confidence_score, 0.1);
      s.summary += " (that lateness is inside the cross-node clock error bound)";
    }
    *old = std::move(s);
  };
  std::optional<Straggler> network_only;
  if (!nc.node.empty()) {
    auto same = std::find_if(ranked.begin(), ranked.end(), [&](const Straggler& s) {
      return s.node == nc.node && s.ordering_determined;
    });
    if (same == ranked.end()) {
      network_only = NetworkStraggler(nc);
      RunqShare cpu = NodeRunqShare(side, data, nc.node);
      ExplainByNodeResources(*network_only, ic, cpu, nc.slowed);
      if (network_only->cause == "cpu_contention") {
        // As confident as the CPU starvation alone would make it.
        Straggler alone = CpuStraggler(nc.node, cpu, node_view, view_basis);
        if (alone.confidence_score > network_only->confidence_score) {
          network_only->confidence = alone.confidence;
          network_only->confidence_score = alone.confidence_score;
        }
      }
    } else if (nc.slowed) {
      // One network cause: the stronger of the windows' view and the retransmit attribution.
      // (Retransmits in collectives no slower than the others explain none of its lateness.)
      Cause net = NetworkCause(nc);
      auto old = std::find_if(same->causes.begin(), same->causes.end(),
                              [](const Cause& c) { return c.kind == "network"; });
      if (old != same->causes.end()) {
        net.score = std::max(net.score, old->score);
        net.summary = old->summary + "; " + net.summary;
        same->causes.erase(old);
      }
      same->causes.push_back(std::move(net));
      same->evidence.push_back(NetworkEvidence(nc));
      SetTopCause(*same);
    }
  }
  for (Straggler& s : ranked) DiscountNetworkUnderCpu(s);  // the lateness straggler
  // A network finding is a verdict where the collectives with its repairs were slower.
  // ... and the finding is more than a hint: a few slower collectives with retransmits on a
  // node that was not late (low confidence) are an observation.
  // A finding whose cause the node's disk or CPU took over rests, like those findings, on the
  // node being later than the others.
  if (network_only) {
    // A hint beside another node's lateness verdict; alone, it is the verdict (its
    // confidence says how sure).
    const bool weak = !AtLeastMedium(network_only->confidence) && lc.participant >= 0;
    const bool resource = network_only->cause != "network" &&
                          NodeLatenessExcess(node_view, network_only->node).later();
    // With no other verdict, a confident finding stays one: its summary says whether its
    // collectives were slower.
    const bool alone =
        ranked.empty() && r.stragglers.empty() && AtLeastMedium(network_only->confidence);
    place(std::move(*network_only), resource || alone || (nc.slowed && !weak));
  }
  // Resource findings are verdicts where their node is also later than the others.
  if (!ic.node.empty() && !named(ic.node)) {
    place(IoStraggler(ic), ic.lateness.later());
  }
  // The most CPU-starved node, where nothing above names it.
  std::string starved;
  RunqShare starved_share;
  const std::map<std::string, RunqShare> shares = NodeRunqShares(side, data);
  for (const std::string& node : side.nodes) {
    auto found = shares.find(node);
    const RunqShare cpu = found == shares.end() ? RunqShare{} : found->second;
    if (cpu.stands_out && (starved.empty() || cpu.share > starved_share.share)) {
      starved = node;
      starved_share = cpu;
    }
  }
  if (!starved.empty() && !named(starved)) {
    place(CpuStraggler(starved, starved_share, node_view, view_basis),
          NodeLatenessExcess(node_view, starved).later());
  }
  DemoteNetworkHints(ranked, observed);
  return observed;
}

}  // namespace

rs::Result<Report> BuildReport(rs::OpenedDb& opened) {
  rs::Db& db = opened.db();
  Report r;
  ReadSpan(opened, r);
  const bool merged = r.db_kind == "merged";
  ASSIGN_OR_RETURN(r.clock, LoadClocks(db, merged, r.notes));
  CallSemantics sem;
  ASSIGN_OR_RETURN(CollectiveData data, LoadTiming(db, r, sem));
  RETURN_IF_ERROR(CountUnidentifiedCalls(db, data.device_ops_by_nccl_names, r));
  TakeInventory(data, r);
  RETURN_IF_ERROR(AddSourceNotes(db, r.notes));
  if (merged) RETURN_IF_ERROR(AddMergeNotes(db, r.notes));
  ASSIGN_OR_RETURN(SideEvents side, LoadSideEvents(db, data.participants));
  AddRetransmitNotes(side, r);
  std::vector<ArrivalStats> stats = ParticipantStats(data);
  r.per_rank = stats;
  std::sort(r.per_rank.begin(), r.per_rank.end(), [](const ArrivalStats& a, const ArrivalStats& b) {
    return RankOrderLess(a.node, a.rank, a.pid.value_or(0), b.node, b.rank, b.pid.value_or(0));
  });
  r.per_node = NodeStats(data);
  RETURN_IF_ERROR(AddHang(db, data, r));
  QualifyHangByUnidentified(r);
  if (r.comms_per_rank > 1) {
    r.per_group = GroupStats(data);
    r.across_groups = AcrossGroups(r.per_group);
  }
  RETURN_IF_ERROR(AddFlightRecorder(db, r));
  const std::vector<ArrivalStats> wait_stats =
      data.device_collectives > 0 ? AsWaitStats(stats) : std::vector<ArrivalStats>{};
  bool on_waits = false;
  LatenessCandidate lc = FindLateness(data, stats, wait_stats, r, &on_waits);
  std::vector<Straggler> ranked;
  if (lc.participant >= 0) {
    ranked.push_back(LatenessStraggler(data, on_waits ? wait_stats : stats, lc, side, sem));
  }
  if (!r.per_group.empty()) AddGroupStragglers(data, stats, side, sem, lc, r, ranked);
  std::vector<Straggler> observed = PlaceResourceFindings(data, side, lc, r, ranked);
  ASSIGN_OR_RETURN(const RdmaLinks rdma, LoadRdmaLinks(db, data));
  PlaceRdmaFindings(rdma, ranked, observed, r.notes);
  ASSIGN_OR_RETURN(const ProxyWaits proxy, LoadProxyWaits(db));
  PlaceProxyWaits(proxy, ranked, observed, r.notes);
  for (std::vector<Straggler>* findings : {&ranked, &observed}) {
    std::stable_sort(findings->begin(), findings->end(),
                     [](const Straggler& a, const Straggler& b) {
                       return a.confidence_score > b.confidence_score;
                     });
    for (Straggler& s : *findings) NameWho(s, data, side, r.clock);
  }
  for (Straggler& s : r.stragglers) NameWho(s, data, side, r.clock);  // hang culprits
  // A finding of low confidence names nobody: it is an observation (a clean run's few
  // retransmits in 4 of 128 collectives were listed as the first straggler, with a
  // hardware-failure remediation). Hang culprits stay, whatever their confidence.
  for (Straggler& s : ranked) {
    (s.confidence == Confidence::kLow ? observed : r.stragglers).push_back(std::move(s));
  }
  r.observations = std::move(observed);
  if (r.hang.detected) CapBesideHang(r);
  RETURN_IF_ERROR(AddWarnings(db, merged, r));
  RETURN_IF_ERROR(AddSummaryNotes(db, merged, r));
  AddClockBoundWarnings(r);
  NameResourceLatenessBasis(r);
  AddOnsets(r);
  // Nodes in natural order (node2 before node10) everywhere they are listed.
  auto natural = [](const std::string& a, const std::string& b) {
    return rs::cli::NaturalLess(a, b);
  };
  std::stable_sort(r.nodes.begin(), r.nodes.end(), natural);
  std::stable_sort(r.clock.begin(), r.clock.end(),
                   [&](const NodeClock& a, const NodeClock& b) { return natural(a.node, b.node); });
  std::stable_sort(
      r.per_node.begin(), r.per_node.end(),
      [&](const ArrivalStats& a, const ArrivalStats& b) { return natural(a.node, b.node); });
  r.plots = BuildPlots(data, side, r.start_ns, std::max(r.end_ns, r.start_ns + 1));
  SetVerdict(r, stats);
  return r;
}

}  // namespace rs::analyzer
