#include "analyzer/lateness_straggler.h"

#include <algorithm>

#include "analyzer/causes.h"
#include "analyzer/report_format.h"
#include "analyzer/shape.h"

namespace rs::analyzer {
namespace {

// Lateness comparisons of enqueues, mixed bases and unbounded device conversions are capped
// here: below the 0.7 of a high one.
constexpr double kMediumCeiling = 0.69;

std::string BasisText(const std::string& arrival, const CallSemantics& sem) {
  if (arrival == "device_start") {
    return "device start of each collective per rank (rankscope's NCCL profiler plugin, "
           "gpu_ops.device_start_ns) matched by (comm_id_hash, seq): where the ranks meet on "
           "their devices; the bound adds the device-to-host conversion bound (clock_error_ns) to "
           "the clock alignment's";
  }
  if (arrival == "device_waits") {
    return "device durations of each collective per rank (rankscope's NCCL profiler plugin: "
           "device end - device start, both on that rank's device clock), matched by "
           "(comm_id_hash, seq): the longest wait minus its own is how late it arrived, where "
           "every rank ends the collective together; the clocks' bounds were too wide to order "
           "device starts across nodes";
  }
  if (arrival == "mixed") {
    return "device starts where the profiler plugin timed every rank of a collective, host-side "
           "NCCL call entry elsewhere, matched by (comm_id_hash, seq)";
  }
  if (sem.kind == "enqueue") {
    return "host-side NCCL call entry times matched by (comm_id_hash, seq); these calls only "
           "enqueue (" +
           sem.evidence +
           "): this is when each host issued the collective; GPU-side arrival was not seen";
  }
  if (sem.kind == "mixed") {
    return "host-side NCCL call entry times matched by (comm_id_hash, seq); " + sem.evidence +
           ": a late entry is a late arrival only where the calls block";
  }
  return "host-side NCCL call entry times matched by (comm_id_hash, seq); " +
         std::string(sem.kind == "blocking"
                         ? "the calls block until the collective is done (" + sem.evidence +
                               "), so a late entry is a late "
                               "arrival"
                         : "on a GPU these calls return at enqueue, so "
                           "lateness is the host arriving late to issue the "
                           "collective");
}

// Against its node-mates (one host clock) the rank stands out beyond noise.
bool MatesDecide(const LatenessCandidate& c) {
  return !c.node_level && c.same_node_margin_ns > c.noise_ns &&
         c.same_node_margin_ns > c.mate_bound_ns;
}

void CapAtMedium(Straggler& s, const std::string& why) {
  const Confidence capped = CapAt(s.confidence, Confidence::kMedium);
  if (capped != s.confidence) {
    s.confidence = capped;
    s.confidence_score = std::min(s.confidence_score, kMediumCeiling);
  }
  Evidence e;
  e.kind = "confidence";
  e.summary = "confidence at most medium: " + why;
  s.evidence.push_back(std::move(e));
}

// A host-bound lateness on a node that ran on one kernel with other nodes of the job (the
// same boot_id), whose top cause is its own host work: no CPU competitor outside the job, no
// disk, no network explains it. The job's ranks of those nodes share one set of CPUs and one
// scheduler there (their run-queue waits behind each other are left out of the CPU cause:
// side_events.h), so which of them enters late is the scheduler's choice as much as the
// node's. Measured on the test bed (3 nodes x 2 ranks in network namespaces on 2 CPUs, no
// fault): one node was the last to arrive in 55 of 64 collectives, host-bound, while its
// ranks waited behind the job's ranks no longer than the others did (6.2 and 6.8 ms per window
// between collectives; the other ranks 5.7-7.6 ms). On nodes with machines of their own this
// does not apply.
void UndeterminedOnSharedKernel(Straggler& s, const std::vector<std::string>& mates) {
  std::string names;
  for (const std::string& m : mates) names += (names.empty() ? "" : ", ") + m;
  s.confidence = Confidence::kUndetermined;
  s.confidence_score = std::min(s.confidence_score, 0.1);
  s.summary += " (undetermined: " + s.node + " shares its CPUs with " + names + ")";
  Evidence e;
  e.kind = "shared_kernel";
  e.summary = s.node + " ran on one kernel with " + names +
              " (the same boot_id): their ranks' host work shares one set of CPUs and one "
              "scheduler, so a host-bound lateness that no competitor outside the job, disk or "
              "network explains is not shown to be " +
              s.node + "'s own";
  s.evidence.push_back(std::move(e));
}

// How the order of its arrival was decided: across nodes against the clock bound, among its
// node-mates on one clock, or by device waits.
std::string MarginWords(const LatenessCandidate& c) {
  if (!c.paired) return "lateness margin " + FormatNs(c.margin_ns);
  return "its node's lateness paired within each collective, " + FormatNs(c.margin_ns) + " +- " +
         FormatNs(c.noise_ns) +
         " above the other nodes' (late in part of each step: no median stood out),";
}

void AddOrderingEvidence(const LatenessCandidate& c, const Participant& who, Straggler& s) {
  const bool by_mates = MatesDecide(c);
  Evidence clock;
  clock.kind = "clock";
  const std::string conversion =
      who.device_clock_error_ns > 0 ? " (device conversion bounds included)" : "";
  if (by_mates) {
    clock.summary = "it is also later than the other ranks on " + who.node + " by " +
                    FormatNs(c.same_node_margin_ns) + " (same host clock: no alignment needed" +
                    (c.mate_bound_ns > 0 ? "; device conversion bound " + FormatNs(c.mate_bound_ns)
                                         : std::string()) +
                    ")";
  } else if (c.by_waits) {
    clock.summary = MarginWords(c) + " is inside the cross-node clock error bound of " +
                    FormatNs(c.bound_ns) + conversion +
                    ": the order is taken from the device waits instead";
  } else if (c.determined) {
    clock.summary = MarginWords(c) + " exceeds the cross-node clock error bound of " +
                    FormatNs(c.bound_ns) + conversion;
  } else if (c.one_node && c.same_node_margin_ns >= 0) {
    clock.summary = "it is later than the other ranks on " + who.node + " by " +
                    FormatNs(c.same_node_margin_ns) +
                    " (same host clock), inside its device conversion bound of " +
                    FormatNs(c.mate_bound_ns) + ": the arrival order is undetermined";
  } else {
    clock.summary = MarginWords(c) + " is inside the cross-node clock error bound of " +
                    FormatNs(c.bound_ns) + conversion +
                    ": the arrival order across nodes is undetermined";
  }
  clock.values = {{"clock_bound_ns", static_cast<double>(c.bound_ns)},
                  {"margin_ns", static_cast<double>(c.margin_ns)},
                  {"same_node_bound_ns", static_cast<double>(c.mate_bound_ns)},
                  {"device_clock_error_ns", static_cast<double>(who.device_clock_error_ns)}};
  s.evidence.push_back(std::move(clock));
  if (c.by_waits) {
    Evidence w;
    w.kind = "waits";
    if (c.waits.measured()) {
      // NCCL 2.31's symmetric kernels time their opening barrier (the initial_sync phase):
      // every rank leaves it when the last one reached it.
      w.summary = "in " + std::to_string(c.waits.collectives) + " collectives its kernel waited " +
                  FormatNs(c.waits.own_wait_ns) +
                  " at the opening barrier with its peers (median) and the others' " +
                  FormatNs(c.waits.others_wait_ns) +
                  ", each timed by NCCL on its own device clock (no conversion or alignment "
                  "error): it reached the barrier " +
                  FormatNs(c.waits.late_at_least_ns) + " after them (median)";
    } else {
      w.summary = "in " + std::to_string(c.waits.collectives) + " collectives its device waited " +
                  FormatNs(c.waits.own_wait_ns) + " inside each (median) and the others' " +
                  FormatNs(c.waits.others_wait_ns) +
                  ", each read on its own device clock (no conversion or alignment error); as "
                  "every rank ends a collective within about the last arrival's transfer time, "
                  "it arrived at least " +
                  FormatNs(c.waits.late_at_least_ns) +
                  " later (median). Confidence at most medium: this rests on how collectives "
                  "end, not on a measured bound";
    }
    w.values = {{"collectives", static_cast<double>(c.waits.collectives)},
                {"own_wait_ns", static_cast<double>(c.waits.own_wait_ns)},
                {"others_wait_ns", static_cast<double>(c.waits.others_wait_ns)},
                {"late_at_least_ns", static_cast<double>(c.waits.late_at_least_ns)},
                {"barrier_collectives", static_cast<double>(c.waits.barrier_collectives)}};
    s.evidence.push_back(std::move(w));
  }
}

// Who the finding names, its confidence and the basis its arrivals were compared on.
void SetIdentityAndBasis(Straggler& s, const CollectiveData& data, const ArrivalStats& me,
                         const LatenessCandidate& c, const CallSemantics& sem) {
  const Participant& who = data.participants[c.participant];
  s.node = who.node;
  if (c.node_level) {
    s.ranks = c.node_ranks;
  } else {
    s.rank = who.rank;
    s.pid = who.pid;
    if (who.rank) s.ranks.push_back(*who.rank);
  }
  s.confidence = c.confidence;
  s.confidence_score = c.score;
  s.ordering_determined = c.determined;
  const bool by_mates = MatesDecide(c);
  s.clock_bound_ns = c.bound_ns;
  if (by_mates && c.margin_ns <= c.bound_ns && me.device_collectives > 0) {
    s.clock_bound_ns = c.mate_bound_ns;  // decided among its node-mates on device arrivals
  }
  s.arrival_basis =
      c.by_waits ? "device_waits" : ArrivalBasis(me.device_collectives, me.collectives);
  s.basis = !c.group_lead.empty() && c.by_waits
                ? "device durations of each collective per rank (rankscope's NCCL profiler "
                  "plugin: device end - device start, both on that rank's device clock), "
                  "matched by (comm_id_hash, seq) within each communicator: the longest wait "
                  "minus its own is how late it arrived, where the members end the collective "
                  "together; no clock alignment enters"
            : c.by_waits && c.waits.measured()
                ? "each rank's wait at its kernel's opening barrier with its peers (NCCL's "
                  "initial_sync phase of symmetric-memory kernels, profiler API v7, "
                  "gpu_ops.initial_sync_ns, on that rank's device clock), matched by "
                  "(comm_id_hash, seq): every rank leaves the barrier when the last one reached "
                  "it, so the longest wait minus its own is how late it arrived; no clock "
                  "alignment or conversion enters"
                : BasisText(s.arrival_basis, sem);
  if (data.graph_replays > 0) {
    s.basis +=
        "; CUDA graph replays (no call of their own) matched by their number among the "
        "communicator's replayed collectives (gpu_ops.graph_replay_seq) instead";
  }
  if (data.device_ops_by_nccl_names > 0) {
    s.basis +=
        "; collectives of communicators created before the recorder started by NCCL's own "
        "commHash and seqNumber (gpu_ops.nccl_comm_hash, nccl_seq) instead";
  }
}

// The lateness (or the communicator's evidence), the durations and the ordering evidence.
void AddArrivalEvidence(Straggler& s, const CollectiveData& data,
                        const std::vector<ArrivalStats>& stats, const LatenessCandidate& c,
                        const CallSemantics& sem, bool on_device, const std::string& name) {
  const Participant& who = data.participants[c.participant];
  const ArrivalStats& me = stats[c.participant];
  std::vector<int64_t> others_late, others_dur;
  for (size_t p = 0; p < stats.size(); ++p) {
    if (static_cast<int32_t>(p) == c.participant || stats[p].collectives == 0) continue;
    others_late.push_back(stats[p].median_lateness_ns);
    if (stats[p].median_duration_ns >= 0) others_dur.push_back(stats[p].median_duration_ns);
  }
  const bool across = !c.group_lead.empty();
  Evidence late;
  late.kind = "lateness";
  late.summary = name +
                 (c.found_on_waits ? " waited least inside the collective on its device"
                  : on_device      ? " arrived last on its device"
                                   : " entered last") +
                 " in " + std::to_string(c.last_count) + " of " + std::to_string(c.collectives) +
                 " collectives (" + FormatPercent(c.chance) + " expected by chance); " +
                 (c.node_level ? "its latest rank " + who.Label() + " has " : "") +
                 "median lateness " + FormatNs(me.median_lateness_ns) + " (p90 " +
                 FormatNs(me.p90_lateness_ns) + ") vs " + FormatNs(Quantile(others_late, 0.5)) +
                 " for the other ranks";
  if (c.node_level) {
    late.summary += "; every rank of " + who.node + " is late alike (the node is the straggler)";
  }
  late.values = {{"collectives", static_cast<double>(c.collectives)},
                 {"last_count", static_cast<double>(c.last_count)},
                 {"last_by_chance", c.chance},
                 {"last_z_score", c.z},
                 {"median_lateness_ns", static_cast<double>(me.median_lateness_ns)},
                 {"p90_lateness_ns", static_cast<double>(me.p90_lateness_ns)},
                 {"others_median_lateness_ns", static_cast<double>(Quantile(others_late, 0.5))},
                 {"margin_ns", static_cast<double>(c.margin_ns)},
                 {"same_node_margin_ns", static_cast<double>(c.same_node_margin_ns)},
                 {"noise_ns", static_cast<double>(c.noise_ns)},
                 {"device_arrivals", static_cast<double>(me.device_collectives)},
                 {"host_arrivals", static_cast<double>(me.collectives - me.device_collectives)},
                 {"median_host_lateness_ns", static_cast<double>(me.median_host_lateness_ns)}};
  if (across) {
    s.evidence.insert(s.evidence.end(), c.group_evidence.begin(), c.group_evidence.end());
  } else {
    s.evidence.push_back(std::move(late));
  }
  // An enqueue's duration says nothing of its collective's.
  const bool durations = on_device || sem.kind != "enqueue";
  if (durations && me.median_duration_ns >= 0 && !others_dur.empty()) {
    int64_t od = Quantile(others_dur, 0.5);
    Evidence d;
    d.kind = "duration";
    d.summary = "its median collective duration" + std::string(on_device ? " on the device" : "") +
                " is " + FormatNs(me.median_duration_ns) + " vs " + FormatNs(od) +
                " for the others" +
                (me.median_duration_ns < od ? " (shortest: the others wait for it)" : "");
    d.values = {{"median_duration_ns", static_cast<double>(me.median_duration_ns)},
                {"others_median_duration_ns", static_cast<double>(od)}};
    s.evidence.push_back(std::move(d));
  }
  if (!across) AddOrderingEvidence(c, who, s);
}

// Where the lateness is inside the clock (or device conversion) bound: cause unknown, the
// summary says so; returns whether it is.
bool OrderingUndetermined(Straggler& s, const LatenessCandidate& c, const Participant& who,
                          const std::string& name) {
  if (!c.determined) {
    Cause u;
    u.kind = "unknown";
    u.summary = "ordering undetermined: the lateness difference is inside the clock error bound";
    u.remediation =
        "improve clock sync on the nodes (chrony/PTP) or record longer so "
        "rankscope-merge can align clocks on more rendezvous points";
    s.causes.push_back(std::move(u));
    s.cause = "unknown";
    if (c.one_node && c.same_node_margin_ns >= 0) {
      // One clock for every rank: only the device -> host conversion bounds stand in the way.
      s.causes.back().summary =
          "ordering undetermined: the lateness is inside the device clock conversion bound";
      s.causes.back().remediation =
          "record longer: the profiler plugin's device-to-host conversion bound tightens as it "
          "sees more operations (the first ones of a process carry the widest)";
      s.summary = name + " appears " + FormatNs(c.same_node_margin_ns) +
                  " later than the other ranks on " + who.node +
                  " (one host clock), but that is inside its device clock conversion bound of " +
                  FormatNs(c.mate_bound_ns) + ": the ordering is undetermined";
      return true;
    }
    s.summary = name + " appears " + FormatNs(c.margin_ns) +
                " late, but that is inside the clock error bound of " + FormatNs(c.bound_ns) +
                ": the ordering is undetermined";
    return true;
  }
  return false;
}

// The host windows' causes and, on device arrivals, the shape (host- or device-bound) they
// are weighed by; the summary with the top cause. Returns whether the host side was seen (not
// for CUDA graph replays).
bool SetCausesAndSummary(Straggler& s, const CollectiveData& data,
                         const std::vector<ArrivalStats>& stats, const LatenessCandidate& c,
                         const SideEvents& side, const CallSemantics& sem, bool on_device,
                         const std::string& name) {
  const Participant& who = data.participants[c.participant];
  const ArrivalStats& me = stats[c.participant];
  const bool across = !c.group_lead.empty();
  Evidence windows;
  std::vector<Cause> host_causes = LatenessCauses(data, c.participant, side, windows);
  if (on_device) windows.summary = "host side: " + windows.summary;
  s.evidence.push_back(std::move(windows));
  bool split_host_seen = true;
  if (on_device) {
    ShapeSplit split = SplitLateness(data, stats, c);
    split_host_seen = split.host_seen;
    s.causes = ShapeCauses(split, std::move(host_causes), name);
    if (!split.host_seen) {
      // No host window to weigh (CUDA graph replays): a host that launched the graph late
      // shows only in its ranks' CPU share over the recording, a cause beside the device's.
      const RunqShare cpu = NodeRunqShare(side, data, who.node);
      if (cpu.stands_out) {
        Cause starved = CpuStarvationCause(who.node, cpu);
        starved.summary = split.unseen->host_side + starved.summary;
        // The device's own work keeps what the CPU share leaves unexplained (as a host
        // window's compute cause does).
        for (Cause& k : s.causes) {
          if (k.kind == "compute") k.score = std::max(0.0, 1.0 - starved.score);
        }
        s.causes.push_back(std::move(starved));
        std::stable_sort(s.causes.begin(), s.causes.end(),
                         [](const Cause& a, const Cause& b) { return a.score > b.score; });
      }
    }
    s.shape = split.shape;
    s.evidence.push_back(ShapeEvidence(split));
    s.cause = s.causes.front().kind;
    const std::string lead = across ? name + " " + c.group_lead
                                    : name + " arrives last on its device" +
                                          (c.by_waits ? ", by its device waits" : "") +
                                          " (median " + FormatNs(me.median_lateness_ns) + " late)";
    s.summary =
        lead + "; " +
        (!split.host_seen ? std::string("device-bound as far as recorded: ") + split.unseen->why
         : s.shape == "host_bound"
             ? "host-bound: its host enqueued the collectives " + FormatNs(split.host_excess_ns) +
                   " late (" + FormatPercent(split.host_share) + " of it)"
             : "device-bound: its host enqueued them on time (" +
                   FormatNs(std::max<int64_t>(0, split.host_excess_ns)) + ", " +
                   FormatPercent(split.host_share) + " of it)") +
        "; top cause: " + s.cause;
  } else {
    s.causes = std::move(host_causes);
    s.cause = s.causes.front().kind;
    const std::string late = "(median " + FormatNs(me.median_lateness_ns) + " late";
    if (sem.kind == "enqueue") {
      s.shape = "device_unseen";
      s.summary = (across ? name + " " + c.group_lead + " " + late + ";"
                          : name + " enqueues last on its host " + late + ";") +
                  " GPU-side arrival was not seen); top cause: " + s.cause;
    } else {
      s.shape = "host_entry";
      s.summary = (across ? name + " " + c.group_lead : name + " arrives last " + late + ")") +
                  "; top cause: " + s.cause;
    }
  }
  return split_host_seen;
}

}  // namespace

std::string ArrivalBasis(int64_t device, int64_t all) {
  if (all == 0) return "";
  return device == all ? "device_start" : device == 0 ? "host_entry" : "mixed";
}

Straggler LatenessStraggler(const CollectiveData& data, const std::vector<ArrivalStats>& stats,
                            const LatenessCandidate& c, const SideEvents& side,
                            const CallSemantics& sem) {
  const Participant& who = data.participants[c.participant];
  const ArrivalStats& me = stats[c.participant];
  Straggler s;
  SetIdentityAndBasis(s, data, me, c, sem);
  const std::string name = c.node_level ? who.node : who.Label();
  const bool on_device = s.arrival_basis != "host_entry";
  AddArrivalEvidence(s, data, stats, c, sem, on_device, name);
  if (OrderingUndetermined(s, c, who, name)) return s;
  const bool split_host_seen = SetCausesAndSummary(s, data, stats, c, side, sem, on_device, name);
  if (on_device && !split_host_seen) {
    const HostUnseen& unseen = HostUnseenReason(data);
    CapAtMedium(s, std::string(unseen.why) + unseen.cap);
  } else if (s.shape == "host_bound" && s.cause == "compute" && side.SharesKernel(who.node)) {
    UndeterminedOnSharedKernel(s, side.kernel_mates.at(who.node));
  } else if (s.arrival_basis == "host_entry" && sem.kind == "enqueue") {
    CapAtMedium(s,
                "its lateness is when its host enqueued the collectives (GPU-side arrival was "
                "not seen); a device that runs behind or ahead of its host is invisible there");
  } else if (s.arrival_basis == "mixed") {
    CapAtMedium(s, std::to_string(me.collectives - me.device_collectives) + " of " +
                       std::to_string(me.collectives) +
                       " of its collectives are compared on host entry (not every rank's device "
                       "start recorded)");
  } else if (on_device && who.device_unbounded > 0) {
    CapAtMedium(s, std::to_string(who.device_unbounded) +
                       " of its device arrivals have no conversion bound (clock_error_ns NULL)");
  }
  return s;
}

// The top cause after the causes were re-ranked: `cause` and the summary's "top cause: ".
void SetTopCause(Straggler& s) {
  std::stable_sort(s.causes.begin(), s.causes.end(),
                   [](const Cause& a, const Cause& b) { return a.score > b.score; });
  s.cause = s.causes.front().kind;
  size_t at = s.summary.rfind("top cause: ");
  if (at != std::string::npos) s.summary = s.summary.substr(0, at) + "top cause: " + s.cause;
}

// The compared collectives whose last arrival was one of the finding's processes.
void FindLateArrivals(Straggler& s, const CollectiveData& data) {
  std::vector<LateArrival> all;
  for (const Collective& g : data.collectives) {
    if (!g.compared() || g.last < 0) continue;
    const Participant& p = data.participants[static_cast<size_t>(g.last)];
    if (p.node != s.node || std::find(s.pids.begin(), s.pids.end(), p.pid) == s.pids.end()) {
      continue;
    }
    all.push_back(LateArrival{g.comm, g.seq, data.calls[g.begin].op, p.pid, p.rank, g.last_arrival,
                              g.last_arrival - g.first_arrival});
  }
  s.late_arrivals_total = static_cast<int64_t>(all.size());
  if (all.size() > kMaxLateArrivals) {
    std::stable_sort(all.begin(), all.end(), [](const LateArrival& a, const LateArrival& b) {
      return a.behind_first_ns > b.behind_first_ns;
    });
    all.resize(kMaxLateArrivals);
  }
  std::stable_sort(all.begin(), all.end(), [](const LateArrival& a, const LateArrival& b) {
    return a.arrival_ns < b.arrival_ns;
  });
  s.late_arrivals = std::move(all);
}

}  // namespace rs::analyzer
