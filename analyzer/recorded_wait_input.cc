#include "analyzer/recorded_wait_input.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzer/hang.h"
#include "rscore/cli.h"
#include "rscore/comm_hash.h"

namespace rs::analyzer {
namespace {

// The operation's state and outcome, and since when it has been pending (-1: not pending).
struct Where {
  rs::OpState state = rs::OpState::kEnqueued;
  wait::Outcome outcome = wait::Outcome::kPending;
  int64_t pending_since = -1;
};

Where WhereOfDevice(const DeviceOp& d) {
  if (d.end_ns || d.state == "completed") {
    return {rs::OpState::kCompleted, wait::Outcome::kCompleted, -1};
  }
  if (d.start_ns || d.state == "started") {
    return {rs::OpState::kStarted, wait::Outcome::kPending, d.start_ns.value_or(d.enqueue_ns)};
  }
  return {rs::OpState::kEnqueued, wait::Outcome::kPending, d.enqueue_ns};
}

Where WhereOf(const NcclCall& c) {
  if (c.device) return WhereOfDevice(*c.device);
  if (c.in_flight()) return {rs::OpState::kStarted, wait::Outcome::kPending, c.ts};
  if (c.enqueue) return {rs::OpState::kEnqueued, wait::Outcome::kEnded, c.ts};
  return {rs::OpState::kCompleted, wait::Outcome::kCompleted, -1};
}

// A send or receive: NCCL's p2p calls enqueue, so without a device state a returned one's
// outcome is unknown.
Where WhereOf(const RecordedP2p& c) {
  if (c.device) return WhereOfDevice(*c.device);
  if (c.dur < 0) return {rs::OpState::kStarted, wait::Outcome::kPending, c.ts};
  return {rs::OpState::kEnqueued, wait::Outcome::kEnded, c.ts};
}

// Per communicator: how long a call must have been pending to count as stuck. Its sends' and
// receives' device durations count too: a pipeline's receive posted early waits in its device
// for the upstream stage's compute, and that wait is its usual pace.
std::map<uint64_t, int64_t> StuckThresholds(const CollectiveData& data,
                                            const std::vector<RecordedP2p>& p2p) {
  std::map<uint64_t, std::vector<int64_t>> durations;
  for (const NcclCall& c : data.calls) {
    std::vector<int64_t>& d = durations[c.comm];
    if (c.device && c.device->start_ns && c.device->end_ns) {
      d.push_back(*c.device->end_ns - *c.device->start_ns);
    } else if (!c.device && c.host_seen && !c.in_flight() && !c.enqueue) {
      d.push_back(c.dur);
    }
  }
  for (const RecordedP2p& c : p2p) {
    std::vector<int64_t>& d = durations[c.comm];
    if (c.device && c.device->start_ns && c.device->end_ns) {
      d.push_back(*c.device->end_ns - *c.device->start_ns);
    }
  }
  std::map<uint64_t, int64_t> out;
  for (auto& [comm, d] : durations) {
    out[comm] = std::max(kHangMinStuckNs, kHangStuckFactor * (d.empty() ? 0 : Quantile(d, 0.99)));
  }
  return out;
}

// Since when each collective (comm, seq) and each pair's sends and receives (comm, the two
// communicator ranks) have had a call pending: the oldest of their members' pending calls. A
// member that entered a moment ago does not make a collective others wait in for seconds young.
struct PendingSince {
  std::map<std::pair<uint64_t, int64_t>, int64_t> collective;
  std::map<std::tuple<uint64_t, int64_t, int64_t>, int64_t> pair;
  static std::tuple<uint64_t, int64_t, int64_t> PairOf(const RecordedP2p& c) {
    const int64_t me = c.rank.value_or(-1);
    return {c.comm, std::min(me, c.peer), std::max(me, c.peer)};
  }
};

PendingSince OldestPending(const CollectiveData& data, const std::vector<RecordedP2p>& p2p) {
  PendingSince out;
  auto keep = [](auto& map, const auto& key, int64_t since) {
    auto [it, added] = map.emplace(key, since);
    if (!added) it->second = std::min(it->second, since);
  };
  for (const NcclCall& c : data.calls) {
    const Where w = WhereOf(c);
    if (w.pending_since >= 0) keep(out.collective, std::make_pair(c.comm, c.seq), w.pending_since);
  }
  for (const RecordedP2p& c : p2p) {
    const Where w = WhereOf(c);
    if (w.pending_since >= 0) keep(out.pair, PendingSince::PairOf(c), w.pending_since);
  }
  return out;
}

}  // namespace

rs::Result<std::set<std::string>> LoadLossyNodes(rs::Db& db) {
  std::set<std::string> out;
  ASSIGN_OR_RETURN(rs::Statement st, db.Prepare("SELECT DISTINCT node FROM sources"
                                                " WHERE source IN ('nccl', 'gpu') AND drops > 0"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return out;
    out.insert(st.Text(0));
  }
}

std::vector<RecordedP2p> RecordedP2ps(const CollectiveData& data) {
  std::vector<RecordedP2p> out;
  for (const NcclCall& p : data.p2p) {
    RecordedP2p c;
    c.participant = p.participant;
    c.comm = p.comm;
    c.seq = p.seq;
    c.send = p.op == "SEND";
    c.rank = p.rank;
    c.nranks = p.nranks;
    c.peer = p.peer.value_or(-1);
    c.ts = p.ts;
    c.dur = p.dur;
    c.count = p.count;
    c.datatype = p.datatype;
    c.device = p.device;
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<FrJob> RecordedJob(const CollectiveData& data, const std::vector<RecordedP2p>& p2p,
                                 const std::set<std::string>& lossy_nodes, int64_t end_ns,
                                 std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<FrJob> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  // Global ranks: one process each.
  std::map<int64_t, int32_t> by_rank;
  for (const NcclCall& c : data.calls) {
    const Participant& p = data.participants[c.participant];
    if (!p.rank || !p.rank_recorded) {
      return fail(p.Label() + " (pid " + std::to_string(p.pid) +
                  ") has no global rank: no RANK or SLURM_PROCID in its environment");
    }
    auto [it, added] = by_rank.emplace(*p.rank, c.participant);
    if (!added && it->second != c.participant) {
      return fail("two processes claim rank " + std::to_string(*p.rank) + " (" +
                  data.participants[it->second].Label() + ", pid " + std::to_string(p.pid) + ")");
    }
  }
  // Communicators: members in communicator-rank order.
  std::map<uint64_t, std::map<int64_t, int64_t>> comm_members;  // comm -> comm rank -> global
  std::map<uint64_t, int64_t> comm_nranks;
  for (const NcclCall& c : data.calls) {
    if (!c.rank) {
      return fail(data.participants[c.participant].Label() + " called communicator " +
                  rs::HashHex(c.comm) + " with no communicator rank recorded");
    }
    comm_members[c.comm][*c.rank] = *data.participants[c.participant].rank;
    if (c.nranks) comm_nranks[c.comm] = std::max(comm_nranks[c.comm], *c.nranks);
  }
  for (const RecordedP2p& c : p2p) {
    const Participant& who = data.participants[c.participant];
    if (!c.rank || !who.rank || by_rank.count(*who.rank) == 0) continue;  // no collective
    comm_members[c.comm][*c.rank] = *who.rank;
    if (c.nranks) comm_nranks[c.comm] = std::max(comm_nranks[c.comm], *c.nranks);
  }
  FrJob job;
  job.input.taken_ns = end_ns;
  std::map<uint64_t, size_t> group_of;
  for (const auto& [comm, members] : comm_members) {
    const int64_t nranks = comm_nranks.count(comm) ? comm_nranks[comm] : 0;
    if (static_cast<int64_t>(members.size()) < nranks) {
      return fail("communicator " + rs::HashHex(comm) + " has " + std::to_string(nranks) +
                  " ranks and the recording saw " + std::to_string(members.size()));
    }
    wait::Group g;
    for (const auto& [comm_rank, global] : members) g.members.push_back(global);
    FrGroupInfo info;
    info.id = static_cast<int64_t>(job.groups.size());
    info.name = rs::HashHex(comm);
    info.comm_id_hash = static_cast<int64_t>(comm);
    info.label = "communicator " + info.name + " (ranks " + rs::cli::RankRanges(g.members) + ")";
    g.label = info.label;
    group_of[comm] = job.input.groups.size();
    job.input.groups.push_back(std::move(g));
    job.groups.push_back(std::move(info));
  }
  const std::map<uint64_t, int64_t> stuck_ns = StuckThresholds(data, p2p);
  const PendingSince oldest = OldestPending(data, p2p);
  auto threshold = [&](uint64_t comm) {
    auto it = stuck_ns.find(comm);
    return it == stuck_ns.end() ? kHangMinStuckNs : it->second;
  };
  std::map<int64_t, wait::Rank> ranks;
  for (const NcclCall& c : data.calls) {
    const Participant& p = data.participants[c.participant];
    wait::Rank& r = ranks[*p.rank];
    r.rank = *p.rank;
    r.recorded = true;
    r.basis = wait::Basis::kFlightRecorderNccl;  // completion is recorded (or unknown: kEnded)
    r.gaps = lossy_nodes.count(p.node) > 0;      // a lost call proves nothing (rule 4)
    job.dumps[*p.rank] = FrDumpInfo{p.node, p.pid};
    wait::Op o;
    o.group = group_of[c.comm];
    o.op = rs::OpFromName(c.op);
    o.seq = c.seq;
    const Where w = WhereOf(c);
    o.state = w.state;
    o.outcome = w.outcome;
    if (w.pending_since >= 0 &&
        end_ns - oldest.collective.at({c.comm, c.seq}) < threshold(c.comm)) {
      o.outcome = wait::Outcome::kCompleted;  // progressing, not stuck (see the header)
    }
    o.count = c.count;
    o.dtype = c.datatype;
    o.created_ns = c.ts;
    if (c.device) {
      o.started_ns = c.device->start_ns;
      o.completed_ns = c.device->end_ns;
    } else if (!c.in_flight() && !c.enqueue) {
      o.started_ns = c.ts;
      o.completed_ns = c.ts + c.dur;
    }
    r.ops.push_back(std::move(o));
  }
  for (const RecordedP2p& c : p2p) {
    const Participant& who = data.participants[c.participant];
    if (!who.rank || !ranks.count(*who.rank) || !group_of.count(c.comm)) continue;
    wait::Op o;
    o.group = group_of[c.comm];
    o.op = c.send ? rs::NcclOp::kSend : rs::NcclOp::kRecv;
    o.p2p = true;
    o.seq = c.seq;
    const std::map<int64_t, int64_t>& members = comm_members[c.comm];
    if (auto peer = members.find(c.peer); peer != members.end()) o.peer = peer->second;
    // The recorder numbers a rank's sends to (receives from) each peer of a communicator
    // from its creation (the recording saw it: comm_id_hash is set), the k-th call k: the
    // engine's pair_seq, unless the node lost NCCL calls (a lost one shifts the count).
    if (!lossy_nodes.count(who.node)) o.pair_seq = c.seq;
    const Where w = WhereOf(c);
    o.state = w.state;
    o.outcome = w.outcome;
    if (w.pending_since >= 0 &&
        end_ns - oldest.pair.at(PendingSince::PairOf(c)) < threshold(c.comm)) {
      o.outcome = wait::Outcome::kCompleted;  // progressing, not stuck (see the header)
    }
    o.count = c.count;
    o.dtype = c.datatype;
    o.created_ns = c.ts;
    if (c.device) {
      o.started_ns = c.device->start_ns;
      o.completed_ns = c.device->end_ns;
    }
    ranks[*who.rank].ops.push_back(std::move(o));
  }
  for (auto& [rank, r] : ranks) {
    std::stable_sort(r.ops.begin(), r.ops.end(), [](const wait::Op& a, const wait::Op& b) {
      return a.created_ns < b.created_ns;
    });
    job.input.ranks.push_back(std::move(r));
  }
  return job;
}

}  // namespace rs::analyzer
