#include "recorded_wait_input.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "rscore/cli.h"
#include "rscore/comm_hash.h"

namespace analyzer {
namespace {

constexpr int64_t kStuckFactor = 10;             // as hang.cc
constexpr int64_t kMinStuckNs = 100'000'000;     // as hang.cc

// The operation's state and outcome, and since when it has been pending (-1: not pending).
struct Where {
  rs::OpState state = rs::OpState::kEnqueued;
  wait::Outcome outcome = wait::Outcome::kPending;
  int64_t pending_since = -1;
};

Where WhereOf(const NcclCall& c) {
  if (c.device) {
    const DeviceOp& d = *c.device;
    if (d.end_ns || d.state == "completed") {
      return {rs::OpState::kCompleted, wait::Outcome::kCompleted, -1};
    }
    if (d.start_ns || d.state == "started") {
      return {rs::OpState::kStarted, wait::Outcome::kPending, d.start_ns.value_or(d.enqueue_ns)};
    }
    return {rs::OpState::kEnqueued, wait::Outcome::kPending, d.enqueue_ns};
  }
  if (c.in_flight()) return {rs::OpState::kStarted, wait::Outcome::kPending, c.ts};
  if (c.enqueue) return {rs::OpState::kEnqueued, wait::Outcome::kEnded, c.ts};
  return {rs::OpState::kCompleted, wait::Outcome::kCompleted, -1};
}

// Per communicator: how long a call must have been pending to count as stuck.
std::map<uint64_t, int64_t> StuckThresholds(const CollectiveData& data) {
  std::map<uint64_t, std::vector<int64_t>> durations;
  for (const NcclCall& c : data.calls) {
    std::vector<int64_t>& d = durations[c.comm];
    if (c.device && c.device->start_ns && c.device->end_ns) {
      d.push_back(*c.device->end_ns - *c.device->start_ns);
    } else if (!c.device && c.host_seen && !c.in_flight() && !c.enqueue) {
      d.push_back(c.dur);
    }
  }
  std::map<uint64_t, int64_t> out;
  for (auto& [comm, d] : durations) {
    out[comm] = std::max(kMinStuckNs, kStuckFactor * (d.empty() ? 0 : Quantile(d, 0.99)));
  }
  return out;
}

}  // namespace

std::optional<FrJob> RecordedJob(const CollectiveData& data, int64_t end_ns, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<FrJob> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  // Global ranks: one process each.
  std::map<int64_t, int32_t> by_rank;
  for (const NcclCall& c : data.calls) {
    const Participant& p = data.participants[c.participant];
    if (!p.rank) return fail(p.Label() + " has no global rank (RANK or SLURM_PROCID)");
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
  const std::map<uint64_t, int64_t> stuck_ns = StuckThresholds(data);
  std::map<int64_t, wait::Rank> ranks;
  for (const NcclCall& c : data.calls) {
    const Participant& p = data.participants[c.participant];
    wait::Rank& r = ranks[*p.rank];
    r.rank = *p.rank;
    r.recorded = true;
    r.basis = wait::Basis::kFlightRecorderNccl;  // completion is recorded (or unknown: kEnded)
    job.dumps[*p.rank] = FrDumpInfo{p.node, p.pid};
    wait::Op o;
    o.group = group_of[c.comm];
    o.op = rs::OpFromName(c.op);
    o.seq = c.seq;
    const Where w = WhereOf(c);
    o.state = w.state;
    o.outcome = w.outcome;
    if (w.pending_since >= 0 && end_ns - w.pending_since < stuck_ns.at(c.comm)) {
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
  for (auto& [rank, r] : ranks) {
    std::stable_sort(r.ops.begin(), r.ops.end(), [](const wait::Op& a, const wait::Op& b) {
      return a.created_ns < b.created_ns;
    });
    job.input.ranks.push_back(std::move(r));
  }
  return job;
}

}  // namespace analyzer
