#include "exporter/event_reader.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <set>

#include "exporter/row_pipeline.h"
#include "rscore/schema.h"

namespace rs::exporter {
namespace {

// A text column as the trace gets it (TraceCell): keys built from it match the rows' cells.
std::string Bounded(const Statement& st, int col) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(st.raw(), col));
  return TraceCell(text, static_cast<size_t>(sqlite3_column_bytes(st.raw(), col)));
}

// The tables the trace draws: the event tables (rs::kEventTables) but the RDMA counters, and
// the Flight Recorder's entries.
constexpr const char* kTableNames[kTableCount] = {
    "nccl_events",  "cuda_events",    "tcp_events", "sched_events",
    "block_events", "process_events", "gpu_ops",    "fr_entries",
};
constexpr bool DrawsKnownTables() {
  for (std::string_view t : kTableNames) {
    if (t != "fr_entries" && !IsEventTable(t)) return false;
  }
  return true;
}
static_assert(DrawsKnownTables(), "every table the trace draws is an event table or fr_entries");

// Each SELECT yields the common columns (id, node, timestamp_ns, duration_ns, pid, tid,
// name) followed by the table's own, in the order of namespace col.
constexpr const char* kSelect[kTableCount] = {
    "SELECT id, node, timestamp_ns, duration_ns, pid, tid, op, rank, nranks, comm_id_hash, seq,"
    " count, datatype, reduce_op, bytes, peer, root, ret, state FROM nccl_events",
    "SELECT id, node, timestamp_ns, duration_ns, pid, tid, api, library, bytes, stream, ret,"
    " state FROM cuda_events",
    "SELECT id, node, timestamp_ns, 0, pid, pid, event, family, saddr, daddr, sport, dport,"
    " seq, segments, state, ca_state, err FROM tcp_events",
    "SELECT id, node, timestamp_ns, duration_ns, pid, tid, event, cpu, other_pid, other_tid,"
    " other_comm FROM sched_events",
    "SELECT id, node, timestamp_ns, duration_ns, pid, pid, op, dev, rwbs, bytes, comm"
    " FROM block_events",
    "SELECT id, node, timestamp_ns, 0, pid, pid, event, ppid, comm, filename, exit_code"
    " FROM process_events",
    "SELECT id, node, timestamp_ns, 0, pid, tid, op, rank, nranks, comm_id_hash, seq, count,"
    " datatype, bytes, peer, root, algorithm, protocol, channels, device_start_ns, device_end_ns,"
    " clock_error_ns, net_bytes_sent, net_bytes_recv, state, @V7 FROM gpu_ops",
    "SELECT id, node, timestamp_ns, duration_ns, pid, rank, op, pg, pg_name, pg_desc, seq, is_p2p,"
    " state, profiling_name, src, dst, count, datatype, input_sizes, started_ns, completed_ns,"
    " retired, device_ns, backend, timing FROM fr_entries",
};

// The Flight Recorder entries with their dump's process and facts and their group's name, as
// one table: timestamp_ns and node keep their names so that the filters apply unchanged.
// fr_dumps.backend and timing came with a later merge: NULL where an input lacks them.
constexpr const char* kFrSource =
    "(SELECT e.id AS id, e.node AS node, e.timestamp_ns AS timestamp_ns,"
    " CASE WHEN e.time_discovered_completed_ns IS NULL THEN 0"
    " ELSE MAX(e.time_discovered_completed_ns - e.timestamp_ns, 0) END AS duration_ns,"
    " d.pid AS pid, e.rank AS rank, e.op AS op, e.pg AS pg, g.pg_name AS pg_name,"
    " g.pg_desc AS pg_desc, e.seq AS seq, e.is_p2p AS is_p2p, e.state AS state,"
    " e.profiling_name AS profiling_name, e.src AS src, e.dst AS dst, e.count AS count,"
    " e.datatype AS datatype, e.input_sizes AS input_sizes,"
    " e.time_discovered_started_ns AS started_ns,"
    " e.time_discovered_completed_ns AS completed_ns, e.retired AS retired,"
    " e.duration_ns AS device_ns, @BACKEND AS backend, @TIMING AS timing"
    " FROM fr_entries e JOIN fr_dumps d ON d.input_id = e.input_id"
    " LEFT JOIN process_groups g ON g.id = e.pg)";

// What a SELECT of table t reads from: the table, or for fr_entries the source above.
Result<std::string> Source(Db& db, int t) {
  if (t != static_cast<int>(Table::kFr)) return std::string(kTableNames[t]);
  std::string sql = kFrSource;
  for (const char* column : {"backend", "timing"}) {
    ASSIGN_OR_RETURN(const bool has, rs::HasColumn(db, "fr_dumps", column));
    const std::string key = std::string("@") + (column[0] == 'b' ? "BACKEND" : "TIMING");
    sql.replace(sql.find(key), key.size(), has ? std::string("d.") + column : "NULL");
  }
  return sql;
}

// gpu_ops' columns of profiler API v7 (recordings of earlier recorders lack them: NULL).
constexpr const char* kGpuV7Columns = "user_tag, initial_sync_ns, final_sync_ns, kernel_symmetric";

// A SELECT of kSelect[t] reading from Source(t).
Result<std::string> SelectOf(Db& db, int t) {
  std::string select = kSelect[t];
  if (t == static_cast<int>(Table::kGpu)) {
    ASSIGN_OR_RETURN(const bool v7, rs::HasColumn(db, "gpu_ops", "kernel_symmetric"));
    select.replace(select.find("@V7"), 3, v7 ? kGpuV7Columns : "NULL, NULL, NULL, NULL");
  }
  if (t == static_cast<int>(Table::kFr)) {
    ASSIGN_OR_RETURN(const std::string source, Source(db, t));
    select.replace(select.rfind("fr_entries"), 10, source);
  }
  return select;
}

// Whether the input has table t: gpu_ops came with a later recorder, fr_entries only with
// Flight Recorder dumps in a merged database.
Result<bool> HasTable(Db& db, int t) {
  if (t == static_cast<int>(Table::kGpu)) return HasGpuOps(db);
  if (t == static_cast<int>(Table::kFr)) {
    for (const char* table : {"fr_entries", "fr_dumps", "process_groups"}) {
      ASSIGN_OR_RETURN(const bool has, rs::HasTable(db, table));
      if (!has) return false;
    }
  }
  return true;
}

// The window's WHERE clause (rs::WindowTerms, parameters from ?1); a statement may hold it
// more than once, every copy reading the same parameters.
std::string Where(const RowWindow& w) { return " WHERE 1" + WindowTerms(w, 1); }

Result<Statement> PrepareFiltered(Db& db, const std::string& sql, const RowWindow& w) {
  ASSIGN_OR_RETURN(Statement st, db.Prepare(sql));
  BindWindow(st, w, 1);
  return st;
}

}  // namespace

const char* TableName(Table table) { return kTableNames[static_cast<int>(table)]; }

bool IsLinkedCollective(std::string_view op) {
  return op != "SEND" && op != "RECV" && op != "COMM_INIT" && op != "COMM_DESTROY" &&
         op != "COMM_ABORT" && op != "GROUP_START" && op != "GROUP_END";
}

bool RunsOnDevice(std::string_view op) {
  return op.substr(0, 5) != "COMM_" && op.substr(0, 6) != "GROUP_";
}

Result<std::optional<int64_t>> FirstEventTimestamp(Db& db) {
  std::optional<int64_t> first;
  for (int t = 0; t < kTableCount; ++t) {
    ASSIGN_OR_RETURN(bool present, HasTable(db, t));
    if (!present) continue;
    ASSIGN_OR_RETURN(const std::string source, Source(db, t));
    ASSIGN_OR_RETURN(Statement st, db.Prepare("SELECT MIN(timestamp_ns) FROM " + source));
    ASSIGN_OR_RETURN(bool has, st.Step());
    if (has && !st.IsNull(0)) first = first ? std::min(*first, st.Int(0)) : st.Int(0);
  }
  return first;
}

Result<int64_t> RecordingStartNs(Db& db) {
  ASSIGN_OR_RETURN(auto v, db.QueryText("SELECT value FROM metadata WHERE key = 'start_ns'"));
  if (v && !v->empty()) {
    const int64_t start = std::strtoll(v->c_str(), nullptr, 10);
    if (start > 0) return start;
  }
  ASSIGN_OR_RETURN(std::optional<int64_t> first, FirstEventTimestamp(db));
  return first.value_or(0);
}

Result<std::vector<std::string>> ListNodes(Db& db) {
  std::set<std::string> nodes;
  std::string sql =
      "SELECT node FROM clock_refs UNION SELECT node FROM processes UNION SELECT node FROM "
      "interfaces UNION SELECT node FROM sources";
  for (int t = 0; t < kTableCount; ++t) {
    // A dump's node is the node of a recorded process (in processes), or none.
    if (t == static_cast<int>(Table::kFr)) continue;
    ASSIGN_OR_RETURN(bool present, HasTable(db, t));
    if (present) sql += std::string(" UNION SELECT node FROM ") + kTableNames[t];
  }
  ASSIGN_OR_RETURN(Statement st, db.Prepare(sql));
  while (true) {
    ASSIGN_OR_RETURN(bool has, st.Step());
    if (!has) break;
    nodes.insert(st.Text(0));
  }
  return std::vector<std::string>(nodes.begin(), nodes.end());
}

namespace {

// The end of a row's drawn span.
std::string EndExpr(int t) {
  if (t == static_cast<int>(Table::kTcp) || t == static_cast<int>(Table::kProcess)) {
    return "timestamp_ns";
  }
  if (t == static_cast<int>(Table::kGpu)) {
    // The device slice: what ran on the GPU, never drawn before the enqueue.
    return "MAX(timestamp_ns, COALESCE(device_start_ns, timestamp_ns),"
           " COALESCE(device_end_ns, timestamp_ns))";
  }
  return "timestamp_ns + COALESCE(duration_ns, 0)";
}

}  // namespace

Result<std::optional<std::pair<int64_t, int64_t>>> EventSpan(Db& db) {
  std::optional<std::pair<int64_t, int64_t>> span;
  for (int t = 0; t < kTableCount; ++t) {
    ASSIGN_OR_RETURN(bool present, HasTable(db, t));
    if (!present) continue;
    ASSIGN_OR_RETURN(const std::string source, Source(db, t));
    ASSIGN_OR_RETURN(Statement st, db.Prepare("SELECT MIN(timestamp_ns), MAX(" + EndExpr(t) +
                                              ") FROM " + source));
    ASSIGN_OR_RETURN(bool has, st.Step());
    if (!has || st.IsNull(0)) continue;
    span = span
               ? std::make_pair(std::min(span->first, st.Int(0)), std::max(span->second, st.Int(1)))
               : std::make_pair(st.Int(0), st.Int(1));
  }
  return span;
}

Result<std::map<std::pair<std::string, std::string>, std::string>> ReadBlockDevices(Db& db) {
  std::map<std::pair<std::string, std::string>, std::string> names;
  ASSIGN_OR_RETURN(const bool named, rs::HasTable(db, "block_devices"));
  // Every device with requests, named where the recorder could (an earlier recorder's input has
  // no block_devices table: MAJ:MIN for all).
  const std::string sql =
      named ? "SELECT b.node, b.dev, COALESCE(d.name, '') FROM (SELECT DISTINCT node, dev FROM"
              " block_events) b LEFT JOIN block_devices d ON d.node = b.node AND d.dev = b.dev"
            : "SELECT DISTINCT node, dev, '' FROM block_events";
  ASSIGN_OR_RETURN(Statement st, db.Prepare(sql));
  while (true) {
    ASSIGN_OR_RETURN(bool has, st.Step());
    if (!has) break;
    names[{Bounded(st, 0), Bounded(st, 1)}] = Bounded(st, 2);
  }
  return names;
}

Result<InputSummary> Summarize(Db& db, const RowWindow& filter) {
  InputSummary s;
  bool any = false;
  const std::string where = Where(filter);
  ASSIGN_OR_RETURN(const bool gpu, HasGpuOps(db));
  for (int t = 0; t < kTableCount; ++t) {
    ASSIGN_OR_RETURN(bool present, HasTable(db, t));
    if (!present) continue;
    ASSIGN_OR_RETURN(const std::string source, Source(db, t));
    ASSIGN_OR_RETURN(Statement st, PrepareFiltered(db,
                                                   "SELECT COUNT(*), MIN(timestamp_ns), MAX(" +
                                                       EndExpr(t) + ") FROM " + source + where,
                                                   filter));
    ASSIGN_OR_RETURN(bool has, st.Step());
    if (!has || st.Int(0) == 0) continue;
    s.rows_per_table[t] = st.Int(0);
    s.rows += st.Int(0);
    s.first_ts = any ? std::min(s.first_ts, st.Int(1)) : st.Int(1);
    s.last_ts = any ? std::max(s.last_ts, st.Int(2)) : st.Int(2);
    any = true;
  }
  if (gpu) {
    ASSIGN_OR_RETURN(Statement procs,
                     PrepareFiltered(db, "SELECT DISTINCT node, pid FROM gpu_ops" + where, filter));
    while (true) {
      ASSIGN_OR_RETURN(bool has, procs.Step());
      if (!has) break;
      s.gpu_processes.emplace(Bounded(procs, 0), procs.Int(1));
    }
  }
  // A collective's participants: host calls of processes without gpu_ops, and device runs.
  std::string host = "SELECT comm_id_hash, seq, op, COUNT(*) FROM nccl_events" + where +
                     " AND seq IS NOT NULL AND comm_id_hash IS NOT NULL";
  if (gpu) host += " AND (node, pid) NOT IN (SELECT node, pid FROM gpu_ops" + where + ")";
  std::vector<std::string> queries = {host + " GROUP BY comm_id_hash, seq, op"};
  if (gpu) {
    queries.push_back("SELECT comm_id_hash, seq, op, COUNT(*) FROM gpu_ops" + where +
                      " AND seq IS NOT NULL AND comm_id_hash IS NOT NULL"
                      " AND device_start_ns IS NOT NULL GROUP BY comm_id_hash, seq, op");
  }
  for (const std::string& sql : queries) {
    ASSIGN_OR_RETURN(Statement coll, PrepareFiltered(db, sql, filter));
    while (true) {
      ASSIGN_OR_RETURN(bool has, coll.Step());
      if (!has) break;
      if (!IsLinkedCollective(coll.Text(2))) continue;
      s.collective_size[{static_cast<uint64_t>(coll.Int(0)), coll.Int(1)}] +=
          static_cast<int>(coll.Int(3));
    }
  }
  return s;
}

Result<ProcessMap> ReadProcesses(Db& db) {
  ProcessMap m;
  ASSIGN_OR_RETURN(Statement st,
                   db.Prepare("SELECT node, pid, rank, COALESCE(comm, '') FROM processes"));
  while (true) {
    ASSIGN_OR_RETURN(bool has, st.Step());
    if (!has) break;
    m[{Bounded(st, 0), st.Int(1)}] = ProcessInfo{st.OptInt(2), Bounded(st, 3)};
  }
  return m;
}

Result<EventReader> EventReader::Open(Db& db, const RowWindow& filter) {
  EventReader r;
  const std::string where = Where(filter);
  for (int t = 0; t < kTableCount; ++t) {
    ASSIGN_OR_RETURN(bool present, HasTable(db, t));
    if (!present) {
      r.cursors_[t].present = false;
      r.cursors_[t].started = true;  // never valid
      continue;
    }
    // The timestamp index yields (timestamp_ns, id) order without a sort step (fr_entries,
    // a few thousand rows per rank, is sorted). Equal starts thus come in id order; the lanes
    // of TrackModel keep them nested regardless.
    ASSIGN_OR_RETURN(std::string select, SelectOf(db, t));
    if (t == static_cast<int>(Table::kTcp)) {
      ASSIGN_OR_RETURN(std::string ca_state_err, rs::TcpCaStateErrColumns(db));
      select.replace(select.find("ca_state, err"), 13, ca_state_err);
    }
    std::string sql = select + where + " ORDER BY timestamp_ns, id";
    auto st = PrepareFiltered(db, sql, filter);
    if (!st.ok()) return st.error().Wrap(std::string("reading ") + kTableNames[t]);
    r.cursors_[t].st = std::move(st).value();
  }
  return r;
}

Result<void> EventReader::Advance(Cursor& c) {
  auto has = c.st.Step();
  if (!has.ok()) {
    const int t = static_cast<int>(&c - cursors_.data());
    return has.error().Wrap(std::string("reading ") + kTableNames[t]);
  }
  c.valid = *has;
  c.started = true;
  if (c.valid) {
    c.ts = c.st.Int(col::kTs);
    c.dur_key = c.st.IsNull(col::kDur) ? INT64_MAX : c.st.Int(col::kDur);
    c.id = c.st.Int(col::kId);
  }
  return Ok();
}

Result<bool> EventReader::Next() {
  if (current_ >= 0) RETURN_IF_ERROR(Advance(cursors_[current_]));
  int best = -1;
  for (int t = 0; t < kTableCount; ++t) {
    Cursor& c = cursors_[t];
    if (!c.started) RETURN_IF_ERROR(Advance(c));
    if (!c.valid) continue;
    if (best < 0) {
      best = t;
      continue;
    }
    const Cursor& b = cursors_[best];
    // Tables are visited in order, so ties on (ts, dur) keep the lower table.
    if (c.ts < b.ts || (c.ts == b.ts && c.dur_key > b.dur_key)) best = t;
  }
  current_ = best;
  return best >= 0;
}

}  // namespace rs::exporter
