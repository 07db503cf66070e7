#include "analyzer/report_filter.h"

#include <charconv>
#include <functional>
#include <set>

#include "rscore/cli.h"
#include "rscore/comm_hash.h"
#include "rscore/row_window.h"
#include "rscore/schema.h"

namespace rs::analyzer {

namespace {

rs::Result<int64_t> ParseInt(std::string_view text, int base, const std::string& what) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return rs::Error(what);
  }
  return v;
}

std::string Join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// The values a filter may name, as the refusal lists them (the MCP server's errors do the
// same): at most 16, then how many more.
rs::Result<std::string> Known(rs::Db& db, const std::string& sql,
                              const std::function<std::string(rs::Statement&)>& spell) {
  ASSIGN_OR_RETURN(rs::Statement st, db.Prepare(sql));
  std::vector<std::string> values;
  size_t more = 0;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    if (values.size() < 16) {
      values.push_back(spell(st));
    } else {
      ++more;
    }
  }
  if (values.empty()) return std::string("none");
  return Join(values, ", ") + (more ? " and " + std::to_string(more) + " more" : "");
}

// The recording's ranks with NCCL calls, ascending.
rs::Result<std::vector<int64_t>> Ranks(rs::Db& db) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT DISTINCT rank FROM nccl_events WHERE rank IS NOT NULL"
                              " ORDER BY rank"));
  std::vector<int64_t> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return out;
    out.push_back(st.Int(0));
  }
}

}  // namespace

int64_t RecordingStartNs(const rs::OpenedDb& opened) {
  if (opened.info().start_ns > 0) return opened.info().start_ns;
  auto it = opened.info().metadata.find("start_ns");
  if (it == opened.info().metadata.end()) return 0;
  int64_t v = 0;
  std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  return v;
}

rs::Result<std::vector<int64_t>> ParseRanks(const std::vector<std::string>& values) {
  std::set<int64_t> out;
  for (const std::string& value : values) {
    size_t start = 0;
    while (start <= value.size()) {
      size_t comma = value.find(',', start);
      if (comma == std::string::npos) comma = value.size();
      const std::string item = value.substr(start, comma - start);
      start = comma + 1;
      if (item.empty()) continue;
      const std::string bad = "--ranks '" + item + "': use ranks like 0,3 or 4-7";
      const size_t dash = item.find('-', 1);
      if (dash == std::string::npos) {
        ASSIGN_OR_RETURN(int64_t r, ParseInt(item, 10, bad));
        if (r < 0) return rs::Error(bad);
        out.insert(r);
      } else {
        ASSIGN_OR_RETURN(int64_t lo, ParseInt(item.substr(0, dash), 10, bad));
        ASSIGN_OR_RETURN(int64_t hi, ParseInt(item.substr(dash + 1), 10, bad));
        if (lo < 0 || hi < lo || hi - lo > 1'000'000) return rs::Error(bad);
        for (int64_t r = lo; r <= hi; ++r) out.insert(r);
      }
    }
  }
  if (out.empty()) return rs::Error("--ranks: no rank given (use e.g. --ranks 0,3 or 4-7)");
  return std::vector<int64_t>(out.begin(), out.end());
}

rs::Result<int64_t> ParseComm(const std::string& text) {
  const std::string bad = "--comm '" + text +
                          "': a communicator's comm_id_hash, as the report prints it "
                          "(0x26017f0f7f0ca554) or in decimal";
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    uint64_t v = 0;
    const char* b = text.data() + 2;
    auto [end, ec] = std::from_chars(b, text.data() + text.size(), v, 16);
    if (ec != std::errc() || end != text.data() + text.size()) return rs::Error(bad);
    return static_cast<int64_t>(v);
  }
  return ParseInt(text, 10, bad);
}

namespace {

// Every node named is in the recording (NCCL calls, or a bundle's or an input's node name).
rs::Result<void> CheckNodes(rs::Db& db, const std::vector<std::string>& nodes) {
  std::vector<std::string> missing;
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT (SELECT COUNT(*) FROM nccl_events WHERE node = ?1) +"
                              " (SELECT COUNT(*) FROM metadata WHERE key = 'node' AND"
                              " value = ?1) + (SELECT COUNT(*) FROM metadata WHERE key LIKE"
                              " 'node.%.node' AND value = ?1)"));
  for (const std::string& n : nodes) {
    st.Bind(1, n);
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row || st.Int(0) == 0) missing.push_back(n);
    st.Reset();
  }
  if (missing.empty()) return rs::Ok();
  ASSIGN_OR_RETURN(std::string known,
                   Known(db, "SELECT DISTINCT node FROM nccl_events ORDER BY node",
                         [](rs::Statement& st) { return st.Text(0); }));
  return rs::Error("--nodes: no node " + Join(missing, ", ") +
                   " in this recording (its nodes with NCCL calls: " + known + ")");
}

// The ranks (each with NCCL calls) into temp.rs_report_ranks; returns them as said.
rs::Result<std::string> StoreRanks(rs::Db& db, const std::vector<int64_t>& ranks) {
  std::vector<std::string> r, missing;
  ASSIGN_OR_RETURN(rs::Statement calls,
                   db.Prepare("SELECT COUNT(*) FROM nccl_events WHERE rank = ?1"));
  ASSIGN_OR_RETURN(rs::Statement keep,
                   db.Prepare("INSERT OR IGNORE INTO temp.rs_report_ranks VALUES (?1)"));
  for (int64_t x : ranks) {
    r.push_back(std::to_string(x));
    calls.Bind(1, x);
    ASSIGN_OR_RETURN(bool row, calls.Step());
    const int64_t n = row ? calls.Int(0) : 0;
    calls.Reset();
    if (n == 0) missing.push_back(std::to_string(x));
    RETURN_IF_ERROR(keep.Bind(1, x).Run());
  }
  if (!missing.empty()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> known, Ranks(db));
    return rs::Error("--ranks: no NCCL call of rank " + Join(missing, ", ") +
                     " in this recording (its ranks: " +
                     (known.empty() ? "none" : rs::cli::RankRanges(known)) + ")");
  }
  return Join(r, ", ");
}

// The communicator (one with NCCL calls) into temp.rs_report_comm; returns its hex id.
rs::Result<std::string> StoreComm(rs::Db& db, int64_t comm) {
  char hex[32];
  std::snprintf(hex, sizeof(hex), "0x%016llx", static_cast<unsigned long long>(comm));
  ASSIGN_OR_RETURN(rs::Statement calls,
                   db.Prepare("SELECT COUNT(*) FROM nccl_events WHERE comm_id_hash = ?1"));
  calls.Bind(1, comm);
  ASSIGN_OR_RETURN(bool row, calls.Step());
  if (!row || calls.Int(0) == 0) {
    ASSIGN_OR_RETURN(
        std::string known,
        Known(db,
              "SELECT comm_id_hash, COUNT(DISTINCT rank) FROM nccl_events"
              " WHERE comm_id_hash IS NOT NULL GROUP BY comm_id_hash ORDER BY comm_id_hash",
              [](rs::Statement& st) {
                return rs::HashHex(static_cast<uint64_t>(st.Int(0))) + " (" +
                       std::to_string(st.Int(1)) + " ranks)";
              }));
    return rs::Error("--comm " + std::string(hex) +
                     ": no NCCL call of that communicator in this recording (its "
                     "communicators: " +
                     known + ")");
  }
  ASSIGN_OR_RETURN(rs::Statement keep, db.Prepare("INSERT INTO temp.rs_report_comm VALUES (?1)"));
  RETURN_IF_ERROR(keep.Bind(1, comm).Run());
  return std::string(hex);
}

// The TEMP views: every event table by time, node, and where it has them, process and
// communicator; the other tables with a node column by node (processes by process too).
rs::Result<void> CreateViews(rs::Db& db, const rs::RowWindow& window, const ReportFilter& f) {
  struct Table {
    std::string_view name;
    bool timed, calls, comm;
  };
  std::vector<Table> tables;
  for (const rs::EventTable& e : rs::kEventTables) {
    tables.push_back({e.name, true, e.process_calls, e.communicator});
  }
  for (std::string_view t :
       {"sched_summary", "rdma_ports", "clock_alignment", "clock_refs", "interfaces"}) {
    tables.push_back({t, false, false, false});
  }
  tables.push_back({"processes", false, true, false});
  for (const Table& t : tables) {
    ASSIGN_OR_RETURN(bool has, rs::HasTable(db, t.name));
    if (!has) continue;
    ASSIGN_OR_RETURN(bool has_node, rs::HasColumn(db, t.name, "node"));
    std::string where = rs::StoredWindowTerms(window, {.timed = t.timed, .node = has_node});
    if (t.calls && !f.ranks.empty()) {
      where +=
          " AND (node, pid) IN (SELECT node, pid FROM main.nccl_events WHERE rank IN"
          " (SELECT rank FROM temp.rs_report_ranks))";
    }
    if (t.comm && f.comm)
      where += " AND comm_id_hash = (SELECT comm_id_hash FROM temp.rs_report_comm)";
    if (where.empty()) continue;
    const std::string name(t.name);
    RETURN_IF_ERROR(db.Exec("CREATE TEMP VIEW " + name + " AS SELECT * FROM main." + name +
                            " WHERE 1" + where));
  }
  return rs::Ok();
}

// What the views hold, as the report's note says it; an error where they hold no NCCL call or
// GPU operation.
rs::Result<std::string> DescribeFiltered(rs::Db& db, const std::vector<std::string>& said) {
  ASSIGN_OR_RETURN(int64_t calls, db.QueryInt("SELECT COUNT(*) FROM nccl_events"));
  int64_t ops = 0;
  ASSIGN_OR_RETURN(bool has_gpu, rs::HasTable(db, "gpu_ops"));
  if (has_gpu) {
    ASSIGN_OR_RETURN(ops, db.QueryInt("SELECT COUNT(*) FROM gpu_ops"));
  }
  if (calls + ops == 0) {
    ASSIGN_OR_RETURN(rs::Statement st, db.Prepare("SELECT MIN(timestamp_ns), MAX(timestamp_ns)"
                                                  " FROM main.nccl_events"));
    ASSIGN_OR_RETURN(bool row, st.Step());
    std::string range = row && !st.IsNull(0)
                            ? rs::FormatUtc(st.Int(0)) + " to " + rs::FormatUtc(st.Int(1))
                            : "none";
    return rs::Error("no NCCL call or GPU operation matches " + Join(said, ", ") +
                     " (the recording's NCCL calls span " + range + ")");
  }
  return "only " + Join(said, ", ") + " (report filters): " + std::to_string(calls) +
         " NCCL calls" + (has_gpu ? ", " + std::to_string(ops) + " GPU operations" : "");
}

}  // namespace

rs::Result<std::string> ApplyReportFilter(rs::Db& db, const ReportFilter& f,
                                          int64_t recording_start_ns) {
  if (f.empty()) return std::string();
  std::vector<std::string> said;
  rs::RowWindow window;
  if (!f.nodes.empty()) {
    RETURN_IF_ERROR(CheckNodes(db, f.nodes));
    window.nodes = f.nodes;
    said.push_back("nodes " + Join(f.nodes, ", "));
  }
  if (f.from) {
    window.from_ns = f.from->Resolve(recording_start_ns);
    said.push_back("from " + rs::FormatUtc(window.from_ns));
  }
  if (f.to) {
    window.to_ns = f.to->Resolve(recording_start_ns);
    said.push_back("to " + rs::FormatUtc(window.to_ns));
  }
  // The ranks and the communicator are stored like the window: views hold no parameters.
  RETURN_IF_ERROR(rs::StoreWindow(db, window));
  RETURN_IF_ERROR(
      db.Exec("DROP TABLE IF EXISTS temp.rs_report_ranks; DROP TABLE IF EXISTS temp.rs_report_comm;"
              "CREATE TEMP TABLE rs_report_ranks(rank INTEGER PRIMARY KEY);"
              "CREATE TEMP TABLE rs_report_comm(comm_id_hash INTEGER NOT NULL);"));
  if (!f.ranks.empty()) {
    ASSIGN_OR_RETURN(std::string ranks, StoreRanks(db, f.ranks));
    said.push_back("ranks " + ranks);
  }
  if (f.comm) {
    ASSIGN_OR_RETURN(std::string hex, StoreComm(db, *f.comm));
    said.push_back("communicator " + hex);
  }
  RETURN_IF_ERROR(CreateViews(db, window, f));
  return DescribeFiltered(db, said);
}

}  // namespace rs::analyzer
