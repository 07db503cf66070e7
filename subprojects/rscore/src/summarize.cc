#include "rscore/summarize.h"

#include <sys/stat.h>

#include <climits>
#include <cstdlib>

#include "rscore/bundle.h"
#include "rscore/schema.h"
#include "rscore/sqlite.h"
#include "rscore/zstd_file.h"

namespace rs {
namespace {

// The CUDA calls that may wait for the device: a synchronize of any kind, and the copies and
// sets that are not asynchronous (analyzer/hang_activity.cc IsBlockingCudaCall; the rendezvous
// of merger/rendezvous.cc are among them). The others (kernel launches, asynchronous copies,
// stream-event waits: thousands per second per rank on a real job) are read by no analysis one
// by one.
constexpr const char* kBlockingCuda =
    "(api LIKE '%Synchronize%' OR ((api LIKE 'cudaMemcpy%' OR api LIKE 'cuMemcpy%' OR"
    " api LIKE 'cudaMemset%' OR api LIKE 'cuMemset%') AND api NOT LIKE '%Async%'))";

// The tables read last: they keep only what the rows copied before them point to.
bool CopiedLast(const std::string& table) { return table == "stacks"; }

// The first column of every row of `st`, as text.
Result<std::vector<std::string>> Names(Statement& st) {
  std::vector<std::string> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(st.Text(0));
  }
  return out;
}

Result<std::vector<std::string>> Tables(Db& db, const std::string& schema) {
  ASSIGN_OR_RETURN(Statement st,
                   db.Prepare("SELECT name FROM " + schema +
                              ".sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                              " ORDER BY rowid"));
  return Names(st);
}

Result<std::vector<std::string>> Columns(Db& db, const std::string& schema,
                                         const std::string& table) {
  ASSIGN_OR_RETURN(Statement st,
                   db.Prepare("SELECT name FROM pragma_table_info(?1, ?2) ORDER BY cid"));
  st.Bind(1, table).Bind(2, schema);
  return Names(st);
}

bool Has(const std::vector<std::string>& v, const std::string& x) {
  for (const std::string& s : v) {
    if (s == x) return true;
  }
  return false;
}

// The processes of the job on this node: those that called NCCL, ran the profiler plugin or
// carry a rank (an SQL list over `src`, for the tables it has).
std::string JobPids(const std::vector<std::string>& src_tables) {
  std::string q = "SELECT pid FROM src.nccl_events";
  if (Has(src_tables, "gpu_ops")) q += " UNION SELECT pid FROM src.gpu_ops";
  return q + " UNION SELECT pid FROM src.processes WHERE rank IS NOT NULL";
}

// The rows of `table` a summary keeps, as a WHERE condition over src.`table` (empty: all).
// Each rule names the analysis whose reads it keeps (summarize.h).
Result<std::string> KeptRows(Db& db, const std::string& table,
                             const std::vector<std::string>& src_tables) {
  if (table == "sched_events") {
    // side_events.cc LoadRunq: run-queue waits of the job's processes.
    return "event = 'runq_latency' AND pid IN (" + JobPids(src_tables) + ")";
  }
  if (table == "cuda_events") {
    // analyzer/hang_activity.cc: calls in flight and a rank's latest call (each thread's latest
    // is kept); merger/rendezvous.cc: the synchronizing calls; analyzer/call_semantics.cc:
    // which processes call CUDA. SQLite takes a bare column beside MAX() from the row holding
    // the maximum.
    return std::string(kBlockingCuda) +
           " OR duration_ns IS NULL OR state <> 'complete' OR id IN (SELECT id FROM (SELECT id,"
           " MAX(timestamp_ns) FROM src.cuda_events GROUP BY pid, tid))";
  }
  if (table == "stacks") {
    std::string ids;
    ASSIGN_OR_RETURN(std::vector<std::string> tables, Tables(db, "main"));
    for (const std::string& t : tables) {
      ASSIGN_OR_RETURN(std::vector<std::string> cols, Columns(db, "main", t));
      if (!Has(cols, "stack_id")) continue;
      ids += (ids.empty() ? "" : " UNION ") + std::string("SELECT stack_id FROM main.") + t +
             " WHERE stack_id IS NOT NULL";
    }
    return ids.empty() ? std::string("0") : "id IN (" + ids + ")";
  }
  return std::string();
}

Result<SummaryTable> CopyTable(Db& db, const std::string& table,
                               const std::vector<std::string>& src_tables) {
  ASSIGN_OR_RETURN(std::vector<std::string> mine, Columns(db, "main", table));
  ASSIGN_OR_RETURN(std::vector<std::string> theirs, Columns(db, "src", table));
  std::string cols;
  for (const std::string& c : mine) {
    if (Has(theirs, c)) cols += (cols.empty() ? "\"" : ", \"") + c + "\"";
  }
  SummaryTable t{table, 0, 0};
  ASSIGN_OR_RETURN(t.rows_read, db.QueryInt("SELECT COUNT(*) FROM src.\"" + table + "\""));
  ASSIGN_OR_RETURN(std::string where, KeptRows(db, table, src_tables));
  const std::string verb = table == "metadata" ? "INSERT OR REPLACE" : "INSERT";
  RETURN_IF_ERROR(db.Exec(verb + " INTO main.\"" + table + "\" (" + cols + ") SELECT " + cols +
                          " FROM src.\"" + table + "\"" +
                          (where.empty() ? "" : " WHERE " + where)));
  ASSIGN_OR_RETURN(t.rows_kept, db.QueryInt("SELECT COUNT(*) FROM main.\"" + table + "\""));
  return t;
}

Result<void> SetMetadata(Db& db, const std::string& key, const std::string& value) {
  ASSIGN_OR_RETURN(Statement st,
                   db.Prepare("INSERT OR REPLACE INTO main.metadata(key, value) VALUES (?, ?)"));
  return st.Bind(1, key).Bind(2, value).Run();
}

int64_t FileBytes(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

std::string Absolute(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : path;
}

// Copies the tables of the attached `src` into the summary's database.
Result<std::vector<SummaryTable>> CopyKept(Db& db) {
  ASSIGN_OR_RETURN(std::vector<std::string> mine, Tables(db, "main"));
  ASSIGN_OR_RETURN(std::vector<std::string> theirs, Tables(db, "src"));
  std::vector<SummaryTable> out;
  for (bool last : {false, true}) {
    for (const std::string& t : mine) {
      if (CopiedLast(t) != last || !Has(theirs, t)) continue;
      ASSIGN_OR_RETURN(SummaryTable copied, CopyTable(db, t, theirs));
      out.push_back(std::move(copied));
    }
  }
  return out;
}

}  // namespace

Result<SummaryStats> Summarize(const std::string& input, const OutputTarget& target,
                               bool check_integrity) {
  ASSIGN_OR_RETURN(OpenedDb src, OpenRankscopeFile(input, check_integrity));
  const BundleInfo& info = src.info();
  if (info.db_kind != "bundle") {
    return Error(input + ": is a merged database; summarize each node's .rsb bundle");
  }
  if (info.metadata.count("summary_version")) {
    auto of = info.metadata.find("summary_of");
    return Error(input + ": is already a summary" +
                 (of == info.metadata.end() ? std::string() : " (of " + of->second + ")") +
                 "; summarize the raw .rsb bundle");
  }
  SummaryStats stats;
  stats.node = info.node;
  stats.bundle_bytes = FileBytes(input);
  ASSIGN_OR_RETURN(TempFile image, TempFile::Create("", "summary.db"));
  {
    ASSIGN_OR_RETURN(Db db, Db::Open(image.path(), Db::Mode::kReadWrite));
    RETURN_IF_ERROR(db.Exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"));
    RETURN_IF_ERROR(CreateSchema(db, DbKind::kBundle));
    RETURN_IF_ERROR(db.GuardInput(input));
    ASSIGN_OR_RETURN(Statement attach, db.Prepare("ATTACH DATABASE ? AS src"));
    RETURN_IF_ERROR(attach.Bind(1, src.sqlite_path()).Run());
    auto copied = CopyKept(db);
    auto detached = db.Exec("DETACH DATABASE src");
    if (!copied.ok()) return copied.error();  // the first error is the one that explains
    RETURN_IF_ERROR(detached);
    stats.tables = std::move(copied).value();
    RETURN_IF_ERROR(SetMetadata(db, "summary_version", std::to_string(kSummaryVersion)));
    RETURN_IF_ERROR(SetMetadata(db, "summary_of", Absolute(input)));
    RETURN_IF_ERROR(SetMetadata(db, "summary_bundle_bytes", std::to_string(stats.bundle_bytes)));
    for (const SummaryTable& t : stats.tables) {
      if (t.rows_kept == t.rows_read || t.table == "metadata") continue;
      RETURN_IF_ERROR(SetMetadata(db, "summary_rows." + t.table,
                                  std::to_string(t.rows_kept) + "/" + std::to_string(t.rows_read)));
    }
    RETURN_IF_ERROR(CreateIndexes(db));
  }
  ASSIGN_OR_RETURN(OutputFile out, OutputFile::Create(target));
  RETURN_IF_ERROR(CompressToFd(image.path(), out.fd(), out.shown(), 9));
  stats.summary_bytes = FileBytes(out.path());
  RETURN_IF_ERROR(out.Commit());
  return stats;
}

}  // namespace rs
