#include "merger/fr_import.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "merger/stack_dedup.h"
#include "rscore/cli.h"
#include "rscore/text_escape.h"

namespace rs::merge {
namespace {

struct RecordedRank {
  std::string node;
  int64_t pid = 0;
};

// Global rank -> the recorded process that had it (the one with the most NCCL calls).
rs::Result<std::map<int64_t, RecordedRank>> RecordedRanks(rs::Db& out) {
  std::map<int64_t, RecordedRank> ranks;
  // The merged tables have no indexes yet (they come last): one scan counts every process's
  // calls, where a count per process would scan the table once per process.
  ASSIGN_OR_RETURN(rs::Statement st,
                   out.Prepare("WITH calls AS (SELECT node, pid, COUNT(*) AS n FROM nccl_events"
                               " GROUP BY node, pid)"
                               " SELECT p.node, p.pid, p.rank, COALESCE(c.n, 0) AS n"
                               " FROM processes p LEFT JOIN calls c ON c.node = p.node"
                               " AND c.pid = p.pid WHERE p.rank IS NOT NULL"
                               " ORDER BY n DESC, p.node, p.pid"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    ranks.emplace(st.Int(2), RecordedRank{st.Text(0), st.Int(1)});  // first (most calls) wins
  }
  return ranks;
}

struct RecordedComm {
  std::set<int64_t> ranks;  // global ranks of the processes seen calling it
  int64_t nranks = 0;
};

rs::Result<std::map<int64_t, RecordedComm>> RecordedComms(rs::Db& out) {
  std::map<int64_t, RecordedComm> comms;
  ASSIGN_OR_RETURN(rs::Statement st,
                   out.Prepare("SELECT DISTINCT e.comm_id_hash, p.rank, e.nranks FROM nccl_events e"
                               " JOIN processes p ON p.node = e.node AND p.pid = e.pid"
                               " WHERE e.comm_id_hash IS NOT NULL AND p.rank IS NOT NULL"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    RecordedComm& c = comms[st.Int(0)];
    c.ranks.insert(st.Int(1));
    if (!st.IsNull(2)) c.nranks = std::max(c.nranks, st.Int(2));
  }
  return comms;
}

struct Group {
  int64_t id = 0;
  fr::ProcessGroup pg;  // pg.members 'unknown' where no pg_config lists it
  std::optional<int64_t> comm_id_hash;
  std::string match = "fr_only";
  std::set<int64_t> ranks_seen;  // ranks whose dumps hold entries of it
};

std::string GroupLabel(const fr::ProcessGroup& pg) {
  // Shown escaped where printed (main.cc), like every warning.
  return "'" + pg.name + "'" + (pg.desc.empty() ? "" : " (" + pg.desc + ")");
}

// The recorded communicator over the group's ranks: of the right size, every rank seen calling
// it a member. Unique or none.
void MatchCommunicator(Group& g, const std::map<int64_t, RecordedComm>& comms) {
  if (g.pg.ranks.empty()) return;
  std::set<int64_t> members(g.pg.ranks.begin(), g.pg.ranks.end());
  std::vector<int64_t> fits;
  for (const auto& [hash, c] : comms) {
    if (c.nranks != static_cast<int64_t>(members.size()) || c.ranks.empty()) continue;
    if (std::includes(members.begin(), members.end(), c.ranks.begin(), c.ranks.end())) {
      fits.push_back(hash);
    }
  }
  if (fits.size() == 1) {
    g.comm_id_hash = fits[0];
    g.match = "recorded";
  } else if (fits.size() > 1) {
    g.match = "ambiguous";
  }
}

// The group an entry of `rank` names: the one of that name holding the rank, else the first of
// that name; nullptr where none has it.
Group* FindGroup(std::vector<Group>& groups, const std::string& name, int64_t rank) {
  Group* named = nullptr;
  for (Group& g : groups) {
    if (g.pg.name != name) continue;
    if (std::find(g.pg.ranks.begin(), g.pg.ranks.end(), rank) != g.pg.ranks.end()) return &g;
    if (!named) named = &g;
  }
  return named;
}

// Process groups over all dumps, one per (name, ranks), then those an entry names that no
// pg_config listed (members unknown); each matched to a recorded communicator where one fits.
std::vector<Group> CollectGroups(const std::vector<FrInput>& inputs,
                                 const std::map<int64_t, RecordedComm>& comms) {
  std::vector<Group> groups;
  for (const FrInput& in : inputs) {
    for (const fr::ProcessGroup& pg : in.dump.groups) {
      bool known = std::any_of(groups.begin(), groups.end(), [&](const Group& g) {
        return g.pg.name == pg.name && g.pg.ranks == pg.ranks;
      });
      if (!known) {
        Group g;
        g.id = static_cast<int64_t>(groups.size()) + 1;
        g.pg = pg;
        groups.push_back(std::move(g));
      }
    }
  }
  for (const FrInput& in : inputs) {
    for (const fr::Entry& e : in.dump.entries) {
      Group* g = FindGroup(groups, e.pg_name, in.dump.rank);
      if (!g) {
        Group unknown;
        unknown.id = static_cast<int64_t>(groups.size()) + 1;
        unknown.pg = fr::ProcessGroup{e.pg_name, e.pg_desc, {}, "unknown"};
        groups.push_back(std::move(unknown));
        g = &groups.back();
      }
      g->ranks_seen.insert(in.dump.rank);
    }
  }
  for (Group& g : groups) MatchCommunicator(g, comms);
  return groups;
}

rs::Result<void> WriteGroups(rs::Db& out, const std::vector<Group>& groups) {
  ASSIGN_OR_RETURN(rs::Statement ins_group,
                   out.Prepare("INSERT INTO process_groups(id, pg_name, pg_desc, ranks, size,"
                               " comm_id_hash, match, members, ranks_seen)"
                               " VALUES (?,?,?,?,?,?,?,?,?)"));
  for (const Group& g : groups) {
    RETURN_IF_ERROR(ins_group.Bind(1, g.id)
                        .Bind(2, g.pg.name)
                        .Bind(3, g.pg.desc)
                        .Bind(4, fr::RanksJson(g.pg.ranks))
                        .Bind(5, static_cast<int64_t>(g.pg.ranks.size()))
                        .Bind(6, g.comm_id_hash)
                        .Bind(7, g.match)
                        .Bind(8, g.pg.members)
                        .Bind(9, fr::RanksJson({g.ranks_seen.begin(), g.ranks_seen.end()}))
                        .Run());
  }
  return rs::Ok();
}

std::optional<std::string> NonEmpty(const std::string& s) {
  return s.empty() ? std::optional<std::string>() : std::optional<std::string>(s);
}

// Writes the dumps and their entries (fr_dumps, fr_entries, stacks), times on the merged clock
// where the dump's rank ran on a recorded node.
class DumpWriter {
 public:
  static rs::Result<DumpWriter> Create(rs::Db& out) {
    DumpWriter w;
    ASSIGN_OR_RETURN(w.dump_,
                     out.Prepare("INSERT INTO fr_dumps(input_id, rank, node, pid, format, version,"
                                 " comm_lib_version, entries, clock, pg_status, nccl_comm_state,"
                                 " backend, timing, first_record_id, last_record_id, ring)"
                                 " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
    ASSIGN_OR_RETURN(
        w.entry_,
        out.Prepare(
            "INSERT INTO fr_entries(input_id, rank, node, pg, comm_id_hash, seq, is_p2p, op,"
            " profiling_name, src, dst, state, timestamp_ns, time_discovered_started_ns,"
            " time_discovered_completed_ns, duration_ns, timeout_ms, retired, record_id,"
            " pg_id, op_id, count, datatype, input_sizes, input_dtypes, output_sizes,"
            " output_dtypes, thread_id, thread_name, stack_id, local_timestamp_ns)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
    ASSIGN_OR_RETURN(w.stack_,
                     out.Prepare("INSERT OR IGNORE INTO stacks(id, frames) VALUES (?,?)"));
    return w;
  }

  // `node`, `pid`: the recorded process of the dump's rank (none: unknown); `a`: its node's
  // alignment (nullptr: the dump's own clock).
  rs::Result<void> Write(const FrInput& in, std::vector<Group>& groups,
                         const std::optional<std::string>& node, const std::optional<int64_t>& pid,
                         const NodeAlignment* a, FrImportResult& result) {
    const fr::Dump& d = in.dump;
    a_ = a;
    RETURN_IF_ERROR(dump_.Bind(1, in.input_id)
                        .Bind(2, d.rank)
                        .Bind(3, node)
                        .Bind(4, pid)
                        .Bind(5, d.format)
                        .Bind(6, d.version)
                        .Bind(7, NonEmpty(d.comm_lib_version))
                        .Bind(8, static_cast<int64_t>(d.entries.size()))
                        .Bind(9, a ? "aligned" : "unaligned")
                        .Bind(10, fr::StatusJson(d.status))
                        .Bind(11, NonEmpty(d.nccl_comm_state))
                        .Bind(12, NonEmpty(d.backend))
                        .Bind(13, d.timing)
                        .Bind(14, d.first_record_id)
                        .Bind(15, d.last_record_id)
                        .Bind(16, NonEmpty(d.ring))
                        .Run());
    for (const fr::Entry& e : d.entries) {
      const Group* g = FindGroup(groups, e.pg_name, d.rank);
      ASSIGN_OR_RETURN(const int64_t ts, WriteEntry(in, e, *g, node));
      ++result.entries;
      if (first_time_ || ts < result.first_ns) result.first_ns = ts;
      if (first_time_ || ts > result.last_ns) result.last_ns = ts;
      first_time_ = false;
      for (auto t :
           {Aligned(e.time_discovered_started_ns), Aligned(e.time_discovered_completed_ns)}) {
        if (t) result.last_ns = std::max(result.last_ns, *t);
      }
    }
    ++result.dumps;
    return rs::Ok();
  }

 private:
  std::optional<int64_t> Aligned(std::optional<int64_t> t) const {
    if (!t || !a_) return t;
    return a_->Apply(*t);
  }

  // One entry; returns its (aligned) creation time.
  rs::Result<int64_t> WriteEntry(const FrInput& in, const fr::Entry& e, const Group& g,
                                 const std::optional<std::string>& node) {
    std::optional<int64_t> stack_id;
    if (!e.frames.empty()) {
      std::string text = fr::StackText(e.frames);
      stack_id = StackId(text);
      RETURN_IF_ERROR(stack_.Bind(1, *stack_id).Bind(2, text).Run());
    }
    const int64_t ts = *Aligned(e.time_created_ns);
    std::optional<int64_t> duration_ns;
    if (e.duration_ms) duration_ns = static_cast<int64_t>(*e.duration_ms * 1e6);
    std::optional<int64_t> retired;
    if (e.retired) retired = *e.retired ? 1 : 0;
    auto id = [](int64_t v) { return v >= 0 ? std::optional<int64_t>(v) : std::nullopt; };
    RETURN_IF_ERROR(entry_.Bind(1, in.input_id)
                        .Bind(2, in.dump.rank)
                        .Bind(3, node)
                        .Bind(4, g.id)
                        .Bind(5, g.comm_id_hash)
                        .Bind(6, e.is_p2p ? e.p2p_seq_id : e.collective_seq_id)
                        .Bind(7, e.is_p2p ? 1 : 0)
                        .Bind(8, e.op)
                        .Bind(9, e.profiling_name)
                        .Bind(10, e.src)
                        .Bind(11, e.dst)
                        .Bind(12, e.state)
                        .Bind(13, ts)
                        .Bind(14, Aligned(e.time_discovered_started_ns))
                        .Bind(15, Aligned(e.time_discovered_completed_ns))
                        .Bind(16, duration_ns)
                        .Bind(17, e.timeout_ms)
                        .Bind(18, retired)
                        .Bind(19, id(e.record_id))
                        .Bind(20, id(e.pg_id))
                        .Bind(21, id(e.op_id))
                        .Bind(22, e.input_numel)
                        .Bind(23, NonEmpty(e.datatype))
                        .Bind(24, e.input_sizes)
                        .Bind(25, e.input_dtypes)
                        .Bind(26, e.output_sizes)
                        .Bind(27, e.output_dtypes)
                        .Bind(28, NonEmpty(e.thread_id))
                        .Bind(29, NonEmpty(e.thread_name))
                        .Bind(30, stack_id)
                        .Bind(31, e.time_created_ns)
                        .Run());
    return ts;
  }

  rs::Statement dump_, entry_, stack_;
  const NodeAlignment* a_ = nullptr;
  bool first_time_ = true;
};

// What the dumps leave unknown, said: members of the groups without a dump, groups whose
// members no dump lists, ranks that ran where no node was recorded.
void AddCoverageWarnings(const std::vector<Group>& groups, const std::set<int64_t>& dumped,
                         std::vector<int64_t> unaligned, bool aligned_recording,
                         FrImportResult& result) {
  // Every member of every process group is expected to have written a dump.
  std::set<int64_t> expected;
  for (const Group& g : groups) expected.insert(g.pg.ranks.begin(), g.pg.ranks.end());
  std::vector<int64_t> missing;
  for (int64_t r : expected) {
    if (!dumped.count(r)) missing.push_back(r);
  }
  if (!missing.empty()) {
    result.warnings.push_back("no Flight Recorder dump for rank(s) " +
                              rs::cli::RankRanges(missing) + " of " +
                              std::to_string(expected.size()) +
                              " in the process groups: their state is unknown (copy their "
                              "nccl_trace_rank_N files too)");
  }
  // A group whose members no dump lists cannot say who never entered it: said, never silent.
  for (const Group& g : groups) {
    if (g.pg.members != "unknown") continue;
    result.warnings.push_back(
        "process group " + GroupLabel(g.pg) +
        ": no dump's pg_config lists its members (gloo records them before a group is named; "
        "a dump's ring may have lost them): kept with unknown members, ranks with entries in "
        "it: " +
        rs::cli::RankRanges({g.ranks_seen.begin(), g.ranks_seen.end()}) +
        "; a rank that never entered it cannot be named from the dumps");
  }
  std::sort(unaligned.begin(), unaligned.end());
  if (!unaligned.empty() && aligned_recording) {
    result.warnings.push_back(
        "Flight Recorder rank(s) " + rs::cli::RankRanges(unaligned) +
        " ran where no node recording saw them: their times are that host's wall clock, "
        "not aligned with the recording");
  }
}

}  // namespace

rs::Result<FrImportResult> ImportFlightRecorder(rs::Db& out, const std::vector<FrInput>& inputs,
                                                const std::vector<NodeAlignment>& alignment,
                                                std::ostream& log) {
  FrImportResult result;
  if (inputs.empty()) return result;
  ASSIGN_OR_RETURN(auto recorded, RecordedRanks(out));
  ASSIGN_OR_RETURN(auto comms, RecordedComms(out));
  std::map<std::string, const NodeAlignment*> align_of;
  for (const NodeAlignment& a : alignment) align_of[a.node] = &a;

  std::vector<Group> groups = CollectGroups(inputs, comms);
  RETURN_IF_ERROR(WriteGroups(out, groups));
  ASSIGN_OR_RETURN(DumpWriter writer, DumpWriter::Create(out));
  std::set<int64_t> dumped;
  std::vector<int64_t> unaligned;
  for (const FrInput& in : inputs) {
    const fr::Dump& d = in.dump;
    dumped.insert(d.rank);
    std::optional<std::string> node;
    std::optional<int64_t> pid;
    const NodeAlignment* a = nullptr;
    if (auto it = recorded.find(d.rank); it != recorded.end()) {
      node = it->second.node;
      pid = it->second.pid;
      if (auto al = align_of.find(*node); al != align_of.end()) a = al->second;
    }
    if (!a) unaligned.push_back(d.rank);
    RETURN_IF_ERROR(writer.Write(in, groups, node, pid, a, result));
  }
  AddCoverageWarnings(groups, dumped, std::move(unaligned), !alignment.empty(), result);
  log << "rankscope-merge: Flight Recorder: " << result.dumps << " dump(s), " << result.entries
      << " entries, " << groups.size() << " process group(s)";
  int recorded_groups = 0;
  for (const Group& g : groups) recorded_groups += g.match == "recorded";
  if (!alignment.empty()) {
    log << " (" << recorded_groups << " matched to recorded communicators)";
  }
  log << "\n";
  return result;
}

}  // namespace rs::merge

namespace rs::merge {

FrPlan PlanFlightRecorder(std::vector<std::string>& files, int first_id, std::ostream& log) {
  FrPlan plan;
  std::vector<std::string> rest;
  std::map<int64_t, std::string> rank_file;
  // What the dumps say about themselves, once per text with the ranks it holds for (a job of
  // 1000 ranks writes the same note 1000 times).
  std::map<std::string, std::vector<int64_t>> notes;
  for (const std::string& f : files) {
    if (fr::SniffFile(f) == fr::Sniff::kNotDump) {
      rest.push_back(f);
      continue;
    }
    Input in;
    in.input_id = first_id + static_cast<int>(plan.inputs.size());
    in.file = f;
    in.status = "merged";
    rs::Result<fr::Dump> dump = fr::ReadDump(f);
    if (!dump.ok()) {
      in.status = "skipped";
      in.reason = dump.error().message();
      if (in.reason.rfind(f + ": ", 0) == 0) in.reason.erase(0, f.size() + 2);
    } else if (auto it = rank_file.find(dump->rank); it != rank_file.end()) {
      in.status = "skipped";
      in.reason = "a second Flight Recorder dump of rank " + std::to_string(dump->rank) +
                  " (the first: " + it->second + ")";
    } else {
      rank_file[dump->rank] = f;
      in.reason = "Flight Recorder dump (" + dump->format + ", version " + dump->version +
                  ", rank " + std::to_string(dump->rank) + ")";
      if (const std::vector<std::string>& cut = dump->truncated; !cut.empty()) {
        std::string fields;
        for (size_t i = 0; i < cut.size() && i < 3; ++i) fields += (i ? ", " : "") + cut[i];
        if (cut.size() > 3) fields += " and " + std::to_string(cut.size() - 3) + " more";
        const std::string what = std::to_string(cut.size()) +
                                 " value(s) over what the merged database holds, truncated "
                                 "(marked '[truncated by rankscope-merge: N bytes]'): " +
                                 fields;
        in.reason += "; " + what;
        plan.warnings.push_back(f + " (Flight Recorder rank " + std::to_string(dump->rank) +
                                "): " + what);
      }
      for (const std::string& note : dump->notes) notes[note].push_back(dump->rank);
      plan.dumps.push_back(FrInput{in.input_id, std::move(dump).value()});
    }
    if (in.status == "skipped") {
      ++plan.skipped;
      log << "rankscope-merge: skipping " << rs::EscapeText(f) << ": " << rs::EscapeText(in.reason)
          << "\n";
    }
    plan.inputs.push_back(std::move(in));
  }
  for (auto& [note, ranks] : notes) {
    std::sort(ranks.begin(), ranks.end());
    plan.warnings.push_back("Flight Recorder rank(s) " + rs::cli::RankRanges(ranks) + ": " + note);
  }
  files = std::move(rest);
  return plan;
}

}  // namespace rs::merge
