#include "analyzer/fr_wait_input.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <utility>

#include "rscore/schema.h"

namespace rs::analyzer {
namespace {

struct PgRow {
  std::string name, desc;
  std::vector<int64_t> ranks;
  std::optional<int64_t> comm_id_hash;
};

struct EntryRow {
  int64_t pg = 0, rank = 0, seq = 0;
  bool p2p = false;
  std::string profiling_name, state, datatype;
  std::optional<int64_t> src, dst, count, started_ns, completed_ns, timeout_ms, retired, record_id;
  std::optional<int64_t> duration_ns;
  int64_t created_ns = 0;
  std::string stack;
};

std::string Label(const PgRow& g) {
  return "process group " + g.name +
         (g.desc.empty() || g.desc == "undefined" ? "" : " (" + g.desc + ")");
}

bool Gloo(const std::string& profiling_name) { return profiling_name.rfind("gloo:", 0) == 0; }

// The outcome of one entry (the rules in fr_wait_input.h).
wait::Outcome OutcomeOf(const EntryRow& e, rs::OpState state) {
  if (state == rs::OpState::kCompleted) return wait::Outcome::kCompleted;
  const bool retired = e.retired.value_or(0) != 0;
  if (Gloo(e.profiling_name)) return retired ? wait::Outcome::kEnded : wait::Outcome::kPending;
  return retired ? wait::Outcome::kFailed : wait::Outcome::kPending;
}

rs::Result<std::map<int64_t, PgRow>> ReadGroups(rs::Db& db) {
  std::map<int64_t, PgRow> groups;
  ASSIGN_OR_RETURN(
      rs::Statement st,
      db.Prepare("SELECT id, pg_name, pg_desc, ranks, comm_id_hash FROM process_groups"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    PgRow& g = groups[st.Int(0)];
    g.name = st.Text(1);
    g.desc = st.IsNull(2) ? "" : st.Text(2);
    nlohmann::json ranks = nlohmann::json::parse(st.Text(3), nullptr, false);
    if (ranks.is_array()) {
      for (const auto& r : ranks) {
        if (r.is_number_integer()) g.ranks.push_back(r.get<int64_t>());
      }
    }
    if (!st.IsNull(4)) g.comm_id_hash = st.Int(4);
  }
  return groups;
}

rs::Result<std::vector<EntryRow>> ReadEntries(rs::Db& db) {
  std::vector<EntryRow> rows;
  ASSIGN_OR_RETURN(
      rs::Statement st,
      db.Prepare("SELECT e.pg, e.rank, e.seq, e.is_p2p, e.profiling_name, e.state, e.datatype,"
                 " e.src, e.dst, e.count, e.timestamp_ns, e.time_discovered_started_ns,"
                 " e.time_discovered_completed_ns, e.timeout_ms, e.retired, e.record_id, s.frames,"
                 " e.duration_ns"
                 " FROM fr_entries e LEFT JOIN stacks s ON s.id = e.stack_id"
                 " ORDER BY e.rank, e.id"));
  auto opt = [&](int i) { return st.IsNull(i) ? std::nullopt : std::optional<int64_t>(st.Int(i)); };
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    EntryRow e;
    e.pg = st.Int(0);
    e.rank = st.Int(1);
    e.seq = st.Int(2);
    e.p2p = st.Int(3) != 0;
    e.profiling_name = st.Text(4);
    e.state = st.Text(5);
    e.datatype = st.IsNull(6) ? "" : st.Text(6);
    e.src = opt(7);
    e.dst = opt(8);
    e.count = opt(9);
    e.created_ns = st.Int(10);
    e.started_ns = opt(11);
    e.completed_ns = opt(12);
    e.timeout_ms = opt(13);
    e.retired = opt(14);
    e.record_id = opt(15);
    e.stack = st.IsNull(16) ? "" : st.Text(16);
    e.duration_ns = opt(17);
    rows.push_back(std::move(e));
  }
  return rows;
}

// Members of a group its entries name but no pg_config lists (fr_wait_input.h).
std::vector<int64_t> InferMembers(const std::map<int64_t, PgRow>& groups,
                                  const std::map<int64_t, std::set<int64_t>>& users, const PgRow& g,
                                  const std::set<int64_t>& used_by, std::vector<std::string>& notes,
                                  bool* ordered) {
  const PgRow* unnamed = nullptr;
  int candidates = 0;
  for (const auto& [id, other] : groups) {
    if (!other.name.empty() || other.ranks.empty() || users.count(id)) continue;
    ++candidates;
    unnamed = &other;
  }
  if (candidates == 1) {
    std::vector<int64_t> sorted = unnamed->ranks;
    std::sort(sorted.begin(), sorted.end());
    if (std::includes(sorted.begin(), sorted.end(), used_by.begin(), used_by.end())) {
      notes.push_back(Label(g) +
                      " has no member list of its own in the dumps: its members are taken from "
                      "pg_config's entry with an empty name (PyTorch's gloo records the default "
                      "group's ranks before the group is named)");
      *ordered = true;
      return unnamed->ranks;
    }
  }
  notes.push_back("no dump lists the members of " + Label(g) + ": taken as the " +
                  std::to_string(used_by.size()) +
                  " rank(s) whose entries name it; a member that never used it is not seen");
  *ordered = false;
  return std::vector<int64_t>(used_by.begin(), used_by.end());
}

// Rule of fr_wait_input.h: a coalesced group's operations take its 'coalesced' entry's state.
void ApplyCoalesced(std::vector<wait::Op>& ops) {
  std::map<std::tuple<size_t, bool, int64_t>, const wait::Op*> coalesced;
  std::map<std::tuple<size_t, bool, int64_t>, int> members;
  for (const wait::Op& o : ops) {
    const auto key = std::make_tuple(o.group, o.p2p, o.seq);
    if (o.op == rs::NcclOp::kCoalesced) {
      coalesced[key] = &o;
    } else {
      ++members[key];
    }
  }
  std::vector<wait::Op> out;
  for (const wait::Op& o : ops) {
    const auto key = std::make_tuple(o.group, o.p2p, o.seq);
    auto c = coalesced.find(key);
    if (c == coalesced.end() || !members.count(key)) {
      out.push_back(o);
      continue;
    }
    if (o.op == rs::NcclOp::kCoalesced) continue;  // its operations stand for it
    wait::Op m = o;
    m.state = c->second->state;
    m.outcome = c->second->outcome;
    m.started_ns = c->second->started_ns;
    m.completed_ns = c->second->completed_ns;
    m.duration_ns = c->second->duration_ns;
    out.push_back(std::move(m));
  }
  ops = std::move(out);
}

// Rule 11 of wait_graph.h: per group, peer and direction, the place of each send (receive)
// of a rank whose record reaches back to its start (not wrapped, no gaps). PyTorch's
// p2p_seq_id counts a rank's p2p calls with every peer of the group (one number for a
// coalesced batch), so the pair's own count is taken from the entries in record order (a
// batch's entries are recorded in call order, each with the batch's p2p_seq_id). A group
// whose coalesced p2p entry lists no operations of its own (older PyTorch records the batch
// alone) cannot be counted: its operations are left unnumbered. Called after ApplyCoalesced,
// which keeps a coalesced entry only where it has no operations.
void NumberPairs(std::vector<wait::Op>& ops) {
  std::set<size_t> uncounted;
  for (const wait::Op& o : ops) {
    if (o.p2p && o.op == rs::NcclOp::kCoalesced) uncounted.insert(o.group);
  }
  std::vector<size_t> order;
  for (size_t k = 0; k < ops.size(); ++k) {
    const wait::Op& o = ops[k];
    const bool pair = o.op == rs::NcclOp::kSend || o.op == rs::NcclOp::kRecv;
    if (o.p2p && pair && o.peer && !uncounted.count(o.group)) order.push_back(k);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(ops[a].group, ops[a].seq) < std::tie(ops[b].group, ops[b].seq);
  });
  std::map<std::tuple<size_t, int64_t, rs::NcclOp>, int64_t> count;
  for (size_t k : order) ops[k].pair_seq = ++count[{ops[k].group, *ops[k].peer, ops[k].op}];
}

}  // namespace

std::string FrRankLabel(const FrJob& job, int64_t rank) {
  auto it = job.dumps.find(rank);
  if (it == job.dumps.end() || it->second.node.empty()) return "rank " + std::to_string(rank);
  return it->second.node + " rank " + std::to_string(rank);
}

rs::Result<FrJob> ReadFrJob(rs::Db& db) {
  FrJob job;
  ASSIGN_OR_RETURN(bool has, rs::HasTable(db, "fr_dumps"));
  if (!has) return job;
  std::set<std::string> versions;
  {
    ASSIGN_OR_RETURN(rs::Statement st,
                     db.Prepare("SELECT rank, node, pid, version, clock FROM fr_dumps"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      job.dumps[st.Int(0)] =
          FrDumpInfo{st.IsNull(1) ? "" : st.Text(1), st.IsNull(2) ? 0 : st.Int(2)};
      versions.insert(st.Text(3));
      if (st.Text(4) != "aligned") ++job.unaligned_dumps;
    }
  }
  if (job.dumps.empty()) return job;
  job.versions.assign(versions.begin(), versions.end());
  ASSIGN_OR_RETURN(auto groups, ReadGroups(db));
  ASSIGN_OR_RETURN(std::vector<EntryRow> entries, ReadEntries(db));

  std::map<int64_t, std::set<int64_t>> users;  // pg -> ranks with entries of it
  for (const EntryRow& e : entries) users[e.pg].insert(e.rank);
  std::map<int64_t, size_t> index_of;  // pg -> index into job.input.groups
  std::map<int64_t, bool> ordered;     // pg -> its members are in group-rank order
  for (const auto& [pg, used_by] : users) {
    PgRow& g = groups[pg];
    bool in_order = true;
    std::vector<int64_t> members = g.ranks;
    if (members.empty()) members = InferMembers(groups, users, g, used_by, job.notes, &in_order);
    index_of[pg] = job.input.groups.size();
    ordered[pg] = in_order;
    job.input.groups.push_back(wait::Group{Label(g), members});
    job.groups.push_back(FrGroupInfo{pg, g.name, g.desc, Label(g), g.comm_id_hash});
  }

  std::map<int64_t, std::vector<const EntryRow*>> by_rank;
  for (const EntryRow& e : entries) by_rank[e.rank].push_back(&e);
  for (const auto& [rank, info] : job.dumps) {
    wait::Rank r;
    r.rank = rank;
    r.recorded = true;
    const auto& rows = by_rank[rank];
    std::vector<int64_t> ids;
    bool all_gloo = !rows.empty();
    for (const EntryRow* e : rows) {
      all_gloo = all_gloo && Gloo(e->profiling_name);
      if (e->record_id) ids.push_back(*e->record_id);
    }
    r.basis = all_gloo ? wait::Basis::kFlightRecorderGloo : wait::Basis::kFlightRecorderNccl;
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    // Entries without ids (none of the versions read lacks them) prove nothing absent.
    r.wrapped = ids.size() != rows.size() || (!ids.empty() && ids.front() > 0);
    r.gaps = !ids.empty() && ids.back() - ids.front() + 1 != static_cast<int64_t>(ids.size());
    for (const EntryRow* e : rows) {
      const size_t g = index_of.at(e->pg);
      wait::Op o;
      o.group = g;
      o.op = rs::OpFromProfilingName(e->profiling_name);
      o.p2p = e->p2p;
      o.seq = e->seq;
      o.state = rs::OpStateFromName(e->state).value_or(rs::OpState::kEnqueued);
      o.outcome = OutcomeOf(*e, o.state);
      o.count = e->count;
      o.dtype = e->datatype;
      o.created_ns = e->created_ns;
      o.started_ns = e->started_ns;
      o.completed_ns = e->completed_ns;
      o.duration_ns = e->duration_ns;
      if (e->timeout_ms && *e->timeout_ms > 0) o.timeout_ns = *e->timeout_ms * 1'000'000;
      o.stack = e->stack;
      // 'send a->b' / 'recv a<-b': a is this rank's group rank, b its peer's.
      const auto peer = o.op == rs::NcclOp::kSend   ? e->dst
                        : o.op == rs::NcclOp::kRecv ? e->src
                                                    : std::nullopt;
      const auto& members = job.input.groups[g].members;
      if (peer && ordered[e->pg] && *peer >= 0 && *peer < static_cast<int64_t>(members.size())) {
        o.peer = members[static_cast<size_t>(*peer)];
      }
      r.ops.push_back(std::move(o));
    }
    ApplyCoalesced(r.ops);
    if (!r.wrapped && !r.gaps) NumberPairs(r.ops);
    job.input.ranks.push_back(std::move(r));
  }

  std::set<int64_t> missing, unrecorded;
  for (const auto& [pg, g] : groups) {
    for (int64_t m : g.ranks) {
      if (!job.dumps.count(m)) missing.insert(m);
    }
  }
  for (const wait::Group& g : job.input.groups) {
    for (int64_t m : g.members) {
      if (!job.dumps.count(m) && unrecorded.insert(m).second) {
        missing.insert(m);
        wait::Rank r;
        r.rank = m;
        job.input.ranks.push_back(std::move(r));
      }
    }
  }
  job.missing_ranks.assign(missing.begin(), missing.end());
  return job;
}

}  // namespace rs::analyzer
