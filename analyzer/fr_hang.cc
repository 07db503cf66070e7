#include "fr_hang.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "confidence.h"
#include "rscore/schema.h"

namespace analyzer {
namespace {

struct FrOp {
  int64_t rank = 0;
  int64_t seq = 0;
  bool p2p = false;
  std::string op, profiling_name, state, datatype, dtypes;
  std::optional<int64_t> src, dst, count;
  int64_t created_ns = 0;
  std::optional<int64_t> started_ns, completed_ns;
  bool retired = false;
  std::string stack;
};

struct FrGroup {
  int64_t id = 0;
  std::string name, desc;
  std::vector<int64_t> ranks;
  std::optional<int64_t> comm_id_hash;
  std::map<int64_t, std::vector<FrOp>> collectives;  // rank -> ops in seq order
  std::map<int64_t, std::vector<FrOp>> p2p;          // rank -> ops in seq order
  std::string Label() const {
    return "process group " + name + (desc.empty() || desc == "undefined" ? "" : " (" + desc + ")");
  }
};

struct DumpInfo {
  std::string node;
  int64_t pid = 0;
};

int StateOrder(const std::string& s) {
  if (s == "not_enqueued") return 0;
  if (s == "enqueued") return 1;
  if (s == "started") return 2;
  if (s == "completed") return 3;
  return -1;  // 'no_dump', 'unknown'
}

std::string RankLabel(const std::map<int64_t, DumpInfo>& dumps, int64_t rank) {
  auto it = dumps.find(rank);
  if (it == dumps.end() || it->second.node.empty()) return "rank " + std::to_string(rank);
  return it->second.node + " rank " + std::to_string(rank);
}

// A rank's state at `seq` of a group: its entries there (the least advanced of a coalesced
// group's), or what its dump's range says.
std::string StateAt(const std::vector<FrOp>& ops, int64_t seq, const FrOp** at) {
  *at = nullptr;
  if (ops.empty()) return "not_enqueued";
  std::string state;
  for (const FrOp& o : ops) {
    if (o.seq != seq) continue;
    if (!*at || StateOrder(o.state) < StateOrder(state)) {
      state = o.state;
      *at = &o;
    }
  }
  if (*at) return state;
  if (seq > ops.back().seq) return "not_enqueued";
  // Older than its ring holds, or a gap: completed if anything later completed (one stream).
  for (const FrOp& o : ops) {
    if (o.seq > seq && o.state == "completed") return "completed";
  }
  return "unknown";
}

void AddProgress(HangReport& h, const FrGroup& g, int64_t seq,
                 const std::map<int64_t, DumpInfo>& dumps) {
  for (int64_t r : g.ranks) {
    RankProgress p;
    p.rank = r;
    auto d = dumps.find(r);
    if (d == dumps.end()) {
      p.state = "no_dump";
      p.state_basis = "none";
      h.progress.push_back(std::move(p));
      continue;
    }
    p.node = d->second.node;
    p.pid = d->second.pid;
    p.state_basis = "flight_recorder";
    auto it = g.collectives.find(r);
    static const std::vector<FrOp> kNone;
    const std::vector<FrOp>& ops = it == g.collectives.end() ? kNone : it->second;
    const FrOp* at = nullptr;
    p.state = seq >= 0 ? StateAt(ops, seq, &at) : "";
    for (const FrOp& o : ops) {
      p.last_entered_seq = std::max(p.last_entered_seq.value_or(o.seq), o.seq);
      if (o.state != "enqueued") {
        p.last_started_seq = std::max(p.last_started_seq.value_or(o.seq), o.seq);
      }
      if (o.state == "completed") {
        p.last_completed_seq = std::max(p.last_completed_seq.value_or(o.seq), o.seq);
      }
    }
    if (at) {
      Activity a;
      a.kind = "nccl";
      a.what = at->op;
      a.seq = at->seq;
      a.timestamp_ns = at->created_ns;
      a.state = at->state == "completed" ? "complete" : "in_flight";
      a.stack = at->stack;
      p.doing.push_back(std::move(a));
    }
    h.progress.push_back(std::move(p));
  }
}

// Values of one field at one sequence -> the ranks that used each.
using Variants = std::map<std::string, std::vector<int64_t>>;

bool SymmetricInput(const std::string& op) {
  return op == "ALL_REDUCE" || op == "BROADCAST" || op == "REDUCE" || op == "ALL_GATHER" ||
         op == "REDUCE_SCATTER";
}

void FindMismatches(const FrGroup& g, const std::map<int64_t, DumpInfo>& dumps, HangReport& h) {
  std::map<int64_t, std::map<std::string, Variants>> at_seq;  // seq -> field -> variants
  for (const auto& [rank, ops] : g.collectives) {
    for (const FrOp& o : ops) {
      if (o.op == "COALESCED") continue;
      auto& fields = at_seq[o.seq];
      fields["op"][o.op].push_back(rank);
      if (!o.dtypes.empty()) fields["datatype"][o.dtypes].push_back(rank);
      if (SymmetricInput(o.op) && o.count) {
        fields["count"][std::to_string(*o.count)].push_back(rank);
      }
    }
  }
  for (const auto& [seq, fields] : at_seq) {
    for (const auto& [field, variants] : fields) {
      if (variants.size() < 2) continue;
      if (field != "op" && fields.at("op").size() > 1) continue;  // the op mismatch says it
      Mismatch m;
      m.comm_id_hash = static_cast<uint64_t>(g.comm_id_hash.value_or(0));
      m.process_group = g.Label();
      m.seq = seq;
      m.field = field;
      for (const auto& [value, ranks] : variants) {
        std::vector<std::string> who;
        for (int64_t r : ranks) who.push_back(RankLabel(dumps, r));
        m.variants.emplace_back(value, std::move(who));
      }
      h.mismatches.push_back(std::move(m));
    }
  }
}

// The ranks holding the least used value of the first mismatch at `seq` (none: no mismatch).
std::vector<int64_t> MinorityAt(const FrGroup& g, int64_t seq) {
  Variants ops, counts, types;
  auto it = g.collectives.begin();
  for (; it != g.collectives.end(); ++it) {
    for (const FrOp& o : it->second) {
      if (o.seq != seq || o.op == "COALESCED") continue;
      ops[o.op].push_back(it->first);
      if (SymmetricInput(o.op) && o.count) counts[std::to_string(*o.count)].push_back(it->first);
      if (!o.dtypes.empty()) types[o.dtypes].push_back(it->first);
    }
  }
  for (const Variants* v : {&ops, &counts, &types}) {
    if (v->size() < 2) continue;
    auto least = std::min_element(v->begin(), v->end(), [](const auto& a, const auto& b) {
      return a.second.size() < b.second.size();
    });
    // A tie names nobody: which side is wrong is not decidable.
    bool tie = std::count_if(v->begin(), v->end(), [&](const auto& x) {
                 return x.second.size() == least->second.size();
               }) > 1;
    if (!tie) return least->second;
  }
  return {};
}

struct Candidate {
  HangReport hang;
  int64_t created_ns = INT64_MAX;  // when the stuck operation was first enqueued
};

std::optional<Candidate> CollectiveHang(const FrGroup& g,
                                        const std::map<int64_t, DumpInfo>& dumps) {
  std::set<int64_t> seqs;
  int64_t covered_from = INT64_MIN;  // every dump holds the group's entries from here on
  for (const auto& [rank, ops] : g.collectives) {
    if (ops.empty()) continue;
    covered_from = std::max(covered_from, ops.front().seq);
    for (const FrOp& o : ops) seqs.insert(o.seq);
  }
  for (int64_t seq : seqs) {
    if (seq < covered_from) continue;
    std::map<int64_t, std::string> state;
    int lo = 4, hi = -1;
    bool retired_pending = false;
    int64_t created = INT64_MAX;
    std::string op;
    for (int64_t r : g.ranks) {
      if (!dumps.count(r)) continue;
      auto it = g.collectives.find(r);
      const std::vector<FrOp> none;
      const FrOp* at = nullptr;
      state[r] = StateAt(it == g.collectives.end() ? none : it->second, seq, &at);
      const int s = StateOrder(state[r]);
      if (s < 0) continue;
      lo = std::min(lo, s);
      hi = std::max(hi, s);
      if (at) {
        created = std::min(created, at->created_ns);
        if (at->retired && at->state != "completed") retired_pending = true;
        if (op.empty() || op == "COALESCED") op = at->op;
      }
    }
    if (lo >= 3 || hi < 0) continue;  // completed everywhere it is known
    const std::vector<int64_t> minority = MinorityAt(g, seq);
    if (hi == lo && !retired_pending && minority.empty() && hi < 3) {
      // Every rank at the same point and nobody timed out: possibly a dump taken mid-step.
      bool missing =
          std::any_of(g.ranks.begin(), g.ranks.end(), [&](int64_t r) { return !dumps.count(r); });
      if (!missing) continue;
    }
    Candidate c;
    HangReport& h = c.hang;
    h.detected = true;
    h.basis = "flight_recorder";
    h.process_group = g.Label();
    h.comm_id_hash = static_cast<uint64_t>(g.comm_id_hash.value_or(0));
    h.seq = seq;
    h.op = op;
    c.created_ns = created;
    // A dump holds no time of its own (it is written when a collective times out), so how
    // long the operation was stuck is not known: stuck_for_ns stays 0.
    std::vector<int64_t> culprits, no_dump;
    for (int64_t r : g.ranks) {
      if (!dumps.count(r)) no_dump.push_back(r);
    }
    std::string why;
    Confidence conf = Confidence::kHigh;
    if (lo < hi) {
      for (const auto& [r, s] : state) {
        if (StateOrder(s) == lo) culprits.push_back(r);
      }
      why = "their state there is '" + state[culprits.front()] + "' while the others are further";
      if (!no_dump.empty()) conf = Confidence::kMedium;
    } else if (!minority.empty()) {
      culprits = minority;
      why = "they called it with another op, size or dtype than the others";
      conf = Confidence::kMedium;
    } else if (!no_dump.empty()) {
      culprits = no_dump;
      why = "every rank with a dump is '" + state.begin()->second +
            "' there; these wrote no dump, so their state is unknown";
      conf = Confidence::kLow;
    } else {
      why = "every rank is '" + state.begin()->second +
            "' there: no rank lags, the operation is stuck inside NCCL (network or a device); "
            "the dumps cannot say which rank";
      conf = Confidence::kLow;
    }
    h.confidence = conf;
    for (int64_t r : culprits) {
      h.culprit_ranks.push_back(r);
      h.culprit_labels.push_back(RankLabel(dumps, r));
      auto d = dumps.find(r);
      if (d != dumps.end() && !d->second.node.empty() &&
          std::find(h.culprit_nodes.begin(), h.culprit_nodes.end(), d->second.node) ==
              h.culprit_nodes.end()) {
        h.culprit_nodes.push_back(d->second.node);
      }
    }
    for (int64_t r : g.ranks) {
      if (dumps.count(r) && std::find(culprits.begin(), culprits.end(), r) == culprits.end()) {
        h.waiting_ranks.push_back(r);
      }
    }
    std::string names;
    for (const std::string& l : h.culprit_labels) names += (names.empty() ? "" : ", ") + l;
    h.summary = (op.empty() ? "collective" : op) + " seq " + std::to_string(seq) + " of " +
                g.Label() + " never completed" +
                (culprits.empty() ? "; " + why : " (Flight Recorder): " + names + " — " + why);
    AddProgress(h, g, seq, dumps);
    return c;
  }
  return std::nullopt;
}

// Sends and receives paired per (sender, receiver) in order; a pending one without its
// counterpart names the rank that never posted it.
std::optional<Candidate> P2pHang(const FrGroup& g, const std::map<int64_t, DumpInfo>& dumps) {
  auto global = [&](std::optional<int64_t> group_rank) -> std::optional<int64_t> {
    if (!group_rank || *group_rank < 0 || *group_rank >= static_cast<int64_t>(g.ranks.size())) {
      return std::nullopt;
    }
    std::vector<int64_t> sorted = g.ranks;
    std::sort(sorted.begin(), sorted.end());
    return sorted[*group_rank];
  };
  // (sender, receiver) -> sends at the sender, receives at the receiver, in order.
  std::map<std::pair<int64_t, int64_t>,
           std::pair<std::vector<const FrOp*>, std::vector<const FrOp*>>>
      pairs;
  for (const auto& [rank, ops] : g.p2p) {
    for (const FrOp& o : ops) {
      auto s = global(o.src), d = global(o.dst);
      if (!s || !d) continue;
      if (o.op == "SEND") pairs[{*s, *d}].first.push_back(&o);
      if (o.op == "RECV") pairs[{*s, *d}].second.push_back(&o);
    }
  }
  std::optional<Candidate> best;
  for (const auto& [key, lists] : pairs) {
    const auto& [sends, recvs] = lists;
    const auto [sender, receiver] = key;
    const FrOp* pending = nullptr;
    int64_t culprit = -1;
    if (sends.size() > recvs.size() && dumps.count(receiver)) {
      pending = sends[recvs.size()];
      culprit = receiver;
    } else if (recvs.size() > sends.size() && dumps.count(sender)) {
      pending = recvs[sends.size()];
      culprit = sender;
    }
    if (!pending || pending->state == "completed") continue;
    if (best && best->created_ns <= pending->created_ns) continue;
    Candidate c;
    c.created_ns = pending->created_ns;
    HangReport& h = c.hang;
    h.detected = true;
    h.basis = "flight_recorder";
    h.process_group = g.Label();
    h.comm_id_hash = static_cast<uint64_t>(g.comm_id_hash.value_or(0));
    h.seq = pending->seq;
    h.op = pending->op;
    h.confidence = Confidence::kHigh;
    h.culprit_ranks = {culprit};
    h.culprit_labels = {RankLabel(dumps, culprit)};
    if (auto d = dumps.find(culprit); d != dumps.end() && !d->second.node.empty()) {
      h.culprit_nodes = {d->second.node};
    }
    h.waiting_ranks = {pending->rank};
    const bool send = pending->op == "SEND";
    h.summary = RankLabel(dumps, pending->rank) + "'s " + (send ? "send to " : "receive from ") +
                RankLabel(dumps, culprit) + " (" + g.Label() + ", p2p seq " +
                std::to_string(pending->seq) +
                ") never completed (Flight Recorder): " + RankLabel(dumps, culprit) +
                " posted no matching " + (send ? "receive" : "send");
    for (int64_t r : {pending->rank, culprit}) {
      RankProgress p;
      p.rank = r;
      p.node = dumps.at(r).node;
      p.pid = dumps.at(r).pid;
      p.state_basis = "flight_recorder";
      p.state = r == culprit ? "not_enqueued" : pending->state;
      if (r == pending->rank) {
        Activity a;
        a.kind = "nccl";
        a.what = pending->op;
        a.seq = pending->seq;
        a.timestamp_ns = pending->created_ns;
        a.state = "in_flight";
        a.stack = pending->stack;
        p.doing.push_back(std::move(a));
      }
      h.progress.push_back(std::move(p));
    }
    best = std::move(c);
  }
  return best;
}

}  // namespace

rs::Result<FlightRecorderSummary> AnalyzeFlightRecorder(rs::Db& db) {
  FlightRecorderSummary fa;
  ASSIGN_OR_RETURN(bool has, rs::HasTable(db, "fr_dumps"));
  if (!has) return fa;
  std::map<int64_t, DumpInfo> dumps;
  std::set<std::string> versions;
  {
    ASSIGN_OR_RETURN(
        rs::Statement st,
        db.Prepare("SELECT rank, node, pid, version, clock FROM fr_dumps ORDER BY rank"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      dumps[st.Int(0)] = DumpInfo{st.IsNull(1) ? "" : st.Text(1), st.IsNull(2) ? 0 : st.Int(2)};
      versions.insert(st.Text(3));
      if (st.Text(4) != "aligned") ++fa.unaligned_dumps;
    }
  }
  fa.dumps = static_cast<int>(dumps.size());
  if (dumps.empty()) return fa;
  for (const auto& [r, d] : dumps) fa.dumped_ranks.push_back(r);
  fa.versions.assign(versions.begin(), versions.end());

  std::map<int64_t, FrGroup> groups;
  {
    ASSIGN_OR_RETURN(
        rs::Statement st,
        db.Prepare("SELECT id, pg_name, pg_desc, ranks, comm_id_hash FROM process_groups"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      FrGroup& g = groups[st.Int(0)];
      g.id = st.Int(0);
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
  }
  {
    ASSIGN_OR_RETURN(
        rs::Statement st,
        db.Prepare("SELECT e.pg, e.rank, e.seq, e.is_p2p, e.op, e.profiling_name, e.state,"
                   " e.datatype, e.input_dtypes, e.src, e.dst, e.count, e.timestamp_ns,"
                   " e.time_discovered_started_ns, e.time_discovered_completed_ns, e.retired,"
                   " s.frames FROM fr_entries e LEFT JOIN stacks s ON s.id = e.stack_id"
                   " ORDER BY e.pg, e.rank, e.is_p2p, e.seq, e.id"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      FrOp o;
      o.rank = st.Int(1);
      o.seq = st.Int(2);
      o.p2p = st.Int(3) != 0;
      o.op = st.Text(4);
      o.profiling_name = st.Text(5);
      o.state = st.Text(6);
      o.datatype = st.IsNull(7) ? "" : st.Text(7);
      o.dtypes = st.IsNull(8) ? "" : st.Text(8);
      if (!st.IsNull(9)) o.src = st.Int(9);
      if (!st.IsNull(10)) o.dst = st.Int(10);
      if (!st.IsNull(11)) o.count = st.Int(11);
      o.created_ns = st.Int(12);
      if (!st.IsNull(13)) o.started_ns = st.Int(13);
      if (!st.IsNull(14)) o.completed_ns = st.Int(14);
      o.retired = !st.IsNull(15) && st.Int(15) != 0;
      o.stack = st.IsNull(16) ? "" : st.Text(16);
      FrGroup& g = groups[st.Int(0)];
      if (g.ranks.empty() || std::find(g.ranks.begin(), g.ranks.end(), o.rank) == g.ranks.end()) {
        // A group no pg_config listed: its members are the ranks seen using it.
        if (std::find(g.ranks.begin(), g.ranks.end(), o.rank) == g.ranks.end()) {
          g.ranks.push_back(o.rank);
        }
      }
      (o.p2p ? g.p2p : g.collectives)[o.rank].push_back(std::move(o));
    }
  }
  std::set<int64_t> missing;
  for (auto& [id, g] : groups) {
    std::sort(g.ranks.begin(), g.ranks.end());
    for (int64_t r : g.ranks) {
      if (!dumps.count(r)) missing.insert(r);
    }
  }
  fa.missing_ranks.assign(missing.begin(), missing.end());

  std::optional<Candidate> first;
  HangReport mismatches;
  for (const auto& [id, g] : groups) {
    FindMismatches(g, dumps, mismatches);
    for (auto c : {CollectiveHang(g, dumps), P2pHang(g, dumps)}) {
      if (c && (!first || c->created_ns < first->created_ns)) first = std::move(c);
    }
  }
  if (first) {
    fa.hang = std::move(first->hang);
  } else {
    fa.hang.basis = "flight_recorder";
    fa.hang.summary = "no operation is stuck in the Flight Recorder dumps of " +
                      std::to_string(fa.dumps) + " rank(s)";
  }
  fa.hang.mismatches = std::move(mismatches.mismatches);
  return fa;
}

}  // namespace analyzer
