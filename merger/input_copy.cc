#include "input_copy.h"
#include "table_copy.h"

#include <set>
#include <unordered_map>
#include <utility>

#include "rscore/schema.h"
#include "stack_dedup.h"

namespace merge {
namespace {

// Tables a part holds that are not copied by transfer: stacks are deduplicated against the
// output and metadata is filtered; the rest are written by the merge itself.
const std::set<std::string> kNotTransferred = {"metadata", "stacks", "merge_inputs", "merge_counts",
                                               "clock_alignment"};

rs::Result<void> SetMeta(rs::Db& db, const std::string& key, const std::string& value) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("INSERT OR REPLACE INTO main.metadata(key, value) VALUES (?, ?)"));
  return st.Bind(1, key).Bind(2, value).Run();
}

// Runs `body` in one transaction of `db` with `path` attached as `schema`.
template <typename Body>
auto WithAttached(rs::Db& db, const std::string& path, const std::string& schema, Body body)
    -> decltype(body()) {
  ASSIGN_OR_RETURN(rs::Statement attach, db.Prepare("ATTACH DATABASE ? AS " + schema));
  RETURN_IF_ERROR(attach.Bind(1, path).Run());
  auto result = [&]() -> decltype(body()) {
    ASSIGN_OR_RETURN(rs::Transaction tx, rs::Transaction::Begin(db));
    auto r = body();
    if (!r.ok()) return r;  // rolled back by tx
    RETURN_IF_ERROR(tx.Commit());
    return r;
  }();
  auto detached = db.Exec("DETACH DATABASE " + schema);
  if (!result.ok()) return result;  // the first error is the one that explains
  RETURN_IF_ERROR(detached);
  return result;
}

std::vector<std::string> EventTables() {
  return std::vector<std::string>(std::begin(rs::kEventTables), std::end(rs::kEventTables));
}

rs::Result<void> DropEventIndexes(rs::Db& out) {
  ASSIGN_OR_RETURN(rs::Statement st, out.Prepare("SELECT name, tbl_name FROM main.sqlite_schema"
                                                 " WHERE type = 'index' AND sql IS NOT NULL"));
  std::vector<std::string> names;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    if (rs::IsEventTable(st.Text(1))) names.push_back(st.Text(0));
  }
  for (const std::string& n : names) RETURN_IF_ERROR(out.Exec("DROP INDEX \"" + n + "\""));
  return rs::Ok();
}

struct OutputColumn {
  std::string name, type;
  bool not_null_or_default = false;
};

// Columns of `table` in the main schema of `db` (a part), in order.
rs::Result<std::vector<OutputColumn>> OutputColumns(rs::Db& db, const std::string& table) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT name, upper(type), \"notnull\" OR dflt_value IS NOT NULL"
                              " FROM pragma_table_info(?1, 'main') ORDER BY cid"));
  st.Bind(1, table);
  std::vector<OutputColumn> out;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(OutputColumn{st.Text(0), st.Text(1), st.Int(2) != 0});
  }
  return out;
}

rs::Result<rs::Db> ReopenOutput(const std::string& path) {
  ASSIGN_OR_RETURN(rs::Db out, rs::Db::Open(path, rs::Db::Mode::kReadWrite));
  RETURN_IF_ERROR(UseBuildPragmas(out, 65536));
  RETURN_IF_ERROR(out.Exec("PRAGMA mmap_size=0"));
  return out;
}

}  // namespace

rs::Result<void> UseBuildPragmas(rs::Db& db, int cache_kib) {
  // 16 KiB pages: shallower b-trees and fewer page splits than 4 KiB; less CPU for the copy
  // and the index build (tests/bench/merge.md), no measurable change for the analyzer's report
  // or the exporter reading the merged db. Temp storage in files: CREATE INDEX then sorts in
  // runs of at most the cache size and merges them, instead of holding every key in memory.
  return db.Exec(
      "PRAGMA page_size=16384; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
      " PRAGMA locking_mode=EXCLUSIVE; PRAGMA temp_store=FILE; PRAGMA cache_size=-" +
      std::to_string(cache_kib) + ";");
}

rs::Result<InputCopy> CopyInput(rs::Db& db, const Input& in, const NodeAlignment& al,
                                const std::set<std::string>& skip) {
  ASSIGN_OR_RETURN(std::string image, ReopenInput(in));
  // The input's rows are read on this connection: its limits (time, value size, no views or
  // triggers, untrusted schema) hold for all of it, and errors name the input.
  RETURN_IF_ERROR(db.GuardInput(in.file));
  return WithAttached(db, image, "src", [&]() -> rs::Result<InputCopy> {
    InputCopy copy;
    ASSIGN_OR_RETURN(StackCounts sc, MergeStacks(db, "src"));
    copy.stack_rows = sc.rows_in;
    RETURN_IF_ERROR(RecordStackOrigins(db, in.input_id, "SELECT DISTINCT new FROM temp.stack_map"));
    CopySpec spec{"src", in.node, in.original_node, in.id_shift, al, skip};
    ASSIGN_OR_RETURN(copy.counts, CopyTables(db, spec));
    // Per-node metadata under 'node.<name>.'; recording times aligned, originals kept.
    ASSIGN_OR_RETURN(int64_t meta_in, db.QueryInt("SELECT COUNT(*) FROM src.metadata"));
    ASSIGN_OR_RETURN(rs::Statement meta,
                     db.Prepare("INSERT OR REPLACE INTO main.metadata(key, value)"
                                " SELECT 'node.' || ?1 || '.' || key, value FROM src.metadata"));
    RETURN_IF_ERROR(meta.Bind(1, in.node).Run());
    copy.counts.push_back(TableCount{"metadata", meta_in, meta_in, 0, ""});
    const rs::BundleInfo& info = in.info;
    std::string p = "node." + in.node + ".";
    RETURN_IF_ERROR(SetMeta(db, p + "start_ns", std::to_string(al.Apply(info.start_ns))));
    RETURN_IF_ERROR(SetMeta(db, p + "end_ns", std::to_string(al.Apply(info.end_ns))));
    RETURN_IF_ERROR(SetMeta(db, p + "local_start_ns", std::to_string(info.start_ns)));
    RETURN_IF_ERROR(SetMeta(db, p + "local_end_ns", std::to_string(info.end_ns)));
    return copy;
  });
}

namespace {

// What CopyRecords needs for the event tables of `in` going into the part `db` (still open:
// its temp.stack_map is the input's stack remapping).
rs::Result<RecordCopy> PlanRecordCopy(rs::Db& db, const Input& in, const NodeAlignment& al,
                                      const std::string& part_path,
                                      std::unordered_map<int64_t, int64_t>* stack_map) {
  RecordCopy rc;
  ASSIGN_OR_RETURN(rc.input_path, ReopenInput(in));
  rc.part_path = part_path;
  rc.node = in.node;
  rc.original_node = in.original_node;
  rc.id_shift = in.id_shift;
  rc.align = [al](int64_t local) { return al.Apply(local); };
  ASSIGN_OR_RETURN(rs::Statement map, db.Prepare("SELECT old, new FROM temp.stack_map"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, map.Step());
    if (!row) break;
    (*stack_map)[map.Int(0)] = map.Int(1);
  }
  rc.stack_map = stack_map;
  ASSIGN_OR_RETURN(rs::Db src, rs::Db::Open(rc.input_path, rs::Db::Mode::kReadOnly));
  RETURN_IF_ERROR(src.GuardInput(in.file));
  for (const std::string& t : EventTables()) {
    ASSIGN_OR_RETURN(int64_t input_root, RootPage(src, "table", t));
    if (input_root == 0) continue;  // not in this bundle: nothing to copy, nothing counted
    ASSIGN_OR_RETURN(auto in_cols, TableColumns(src, "main", t));
    ASSIGN_OR_RETURN(auto out_cols, OutputColumns(db, t));
    if (out_cols.empty() || out_cols.back().name != "local_timestamp_ns") {
      return rs::Error(t + ": the part's table does not end with local_timestamp_ns");
    }
    out_cols.pop_back();
    ASSIGN_OR_RETURN(int64_t pk_index, src.QueryInt("SELECT COUNT(*) FROM pragma_index_list('" + t +
                                                    "') WHERE origin = 'pk'"));
    if (pk_index != 0) return rs::Error(t + ": id is not the rowid");
    RecordTable rt;
    rt.name = t;
    rt.input_root = input_root;
    ASSIGN_OR_RETURN(rt.part_root, RootPage(db, "table", t));
    rt.columns = static_cast<int>(in_cols.size());
    // Output columns by name; input columns this version does not know are left out, as the
    // SQL copy leaves them.
    for (const OutputColumn& o : out_cols) {
      int from = -1;
      for (size_t i = 0; i < in_cols.size(); ++i) {
        if (in_cols[i].first == o.name) from = static_cast<int>(i);
      }
      if (from >= 0 && in_cols[static_cast<size_t>(from)].second != o.type) {
        return rs::Error(t + "." + o.name + ": declared type differs from this version's");
      }
      if (from < 0 && o.not_null_or_default) {
        // SQL inserts the default (or fails on NOT NULL); this path writes only NULLs.
        return rs::Error(t + "." + o.name + ": missing, and not a plain nullable column");
      }
      rt.source.push_back(from);
    }
    int found = 0;
    for (int i = 0; i < rt.columns; ++i) {
      const std::string& name = in_cols[static_cast<size_t>(i)].first;
      if (name == "id") rt.rowid_column = i, found |= 1;
      if (name == "node") rt.node_column = i, found |= 2;
      if (name == "timestamp_ns") rt.timestamp_column = i, found |= 4;
      if (name == "stack_id") rt.stack_column = i;
      for (const rs::TimeColumn& tc : rs::kExtraTimeColumns) {
        if (tc.table == t && tc.column == name) rt.time_columns.push_back(i);
      }
    }
    if (found != 7) return rs::Error(t + ": no id, node or timestamp_ns column");
    rc.tables.push_back(rt);
  }
  return rc;
}

// A part with its event tables written page by page (CopyRecords); `records` false: all by SQL.
rs::Result<Part> WritePartWith(const std::string& dir, const std::string& stem, const Input& in,
                               const NodeAlignment& al, bool records) {
  Part part;
  ASSIGN_OR_RETURN(part.file, rs::TempFile::CreateUnnamed(dir, stem));
  ASSIGN_OR_RETURN(rs::Db db, rs::Db::Open(part.file.path(), rs::Db::Mode::kReadWrite));
  RETURN_IF_ERROR(UseBuildPragmas(db, 16384));
  RETURN_IF_ERROR(rs::CreateSchema(db, rs::DbKind::kMerged));
  std::set<std::string> skip;
  if (records) {
    const std::vector<std::string> events = EventTables();
    skip.insert(events.begin(), events.end());
  }
  ASSIGN_OR_RETURN(part.copy, CopyInput(db, in, al, skip));
  if (!records) return part;
  std::unordered_map<int64_t, int64_t> stack_map;
  ASSIGN_OR_RETURN(RecordCopy rc, PlanRecordCopy(db, in, al, part.file.path(), &stack_map));
  RETURN_IF_ERROR(db.Close());
  ASSIGN_OR_RETURN(std::vector<RecordCounts> counts, CopyRecords(rc));
  for (const RecordCounts& c : counts) {
    TableCount t{c.table, c.rows_in, c.rows_out, c.rows_in - c.rows_out, ""};
    if (c.other_node > 0)
      t.note = "rows whose node is not the bundle's node '" + in.original_node + "'";
    if (c.dangling > 0) {
      t.note += (t.note.empty() ? "" : "; ") + std::to_string(c.dangling) +
                " rows referenced stacks missing from the bundle (stack_id set NULL)";
    }
    part.copy.counts.push_back(t);
  }
  part.copy.by_pages = true;
  return part;
}

}  // namespace

rs::Result<Part> WritePart(const std::string& dir, const std::string& stem, const Input& in,
                           const NodeAlignment& al, bool pages) {
  if (pages) {
    auto part = WritePartWith(dir, stem, in, al, /*records=*/true);
    if (part.ok()) return part;
  }
  // Not possible at the record level (see CopyRecords): the same copy by SQL.
  return WritePartWith(dir, stem, in, al, /*records=*/false);
}

rs::Result<void> CombinePart(rs::Db& out, const Input& in, const Part& part) {
  ASSIGN_OR_RETURN(std::vector<std::string> tables, Tables(out, "main"));
  return WithAttached(out, part.file.path(), "part", [&]() -> rs::Result<void> {
    RETURN_IF_ERROR(out.Exec("INSERT OR IGNORE INTO main.stacks SELECT * FROM part.stacks"));
    RETURN_IF_ERROR(RecordStackOrigins(out, in.input_id, "SELECT id FROM part.stacks"));
    // The part's own schema keys stay behind; only the node's keys are the input's.
    RETURN_IF_ERROR(
        out.Exec("INSERT OR REPLACE INTO main.metadata SELECT * FROM part.metadata"
                 " WHERE substr(key, 1, 5) = 'node.'"));
    for (const std::string& t : tables) {
      if (kNotTransferred.count(t) || rs::IsEventTable(t)) continue;
      // Must stay a bare SELECT * of an identically defined table: anything else (a column
      // list, a WHERE) makes SQLite decode and re-encode every row.
      auto r = out.Exec("INSERT INTO main.\"" + t + "\" SELECT * FROM part.\"" + t + "\"");
      if (!r.ok()) return r.error().Wrap("combining table " + t);
    }
    return rs::Ok();
  });
}

rs::Result<EventTablesAdded> AddEventTables(rs::Db& out, const std::string& path,
                                            const std::vector<const Part*>& parts, bool try_splice,
                                            const std::map<std::string, int64_t>& expected_rows) {
  EventTablesAdded added;
  std::vector<std::string> part_paths;
  for (const Part* p : parts) part_paths.push_back(p->file.path());
  if (!try_splice) added.why_not = "splice not requested";
  if (try_splice) {
    RETURN_IF_ERROR(rs::CreateIndexes(out));  // empty: their roots are filled by the splice
    auto plan = PlanSplice(out, path, part_paths, EventTables());
    rs::Result<std::shared_ptr<SpliceWork>> work = rs::Error("no plan");
    if (plan.ok()) {
      // The splice writes the file itself: the connection must really be gone.
      auto closed = out.Close();
      work = closed.ok() ? PrepareSplice(plan.value()) : closed.error();
    }
    if (plan.ok() && work.ok()) {
      ASSIGN_OR_RETURN(added.splice, WriteSplice(*work.value()));
      ASSIGN_OR_RETURN(out, ReopenOutput(path));
      for (const std::string& i : added.splice.reindex) {
        RETURN_IF_ERROR(out.Exec("REINDEX \"" + i + "\""));
      }
      added.spliced = true;
    } else {
      added.why_not = plan.ok() ? work.error().message() : plan.error().message();
      if (!out.raw()) {
        ASSIGN_OR_RETURN(out, ReopenOutput(path));
      }
      RETURN_IF_ERROR(DropEventIndexes(out));  // rebuilt after the rows are in
    }
  }
  if (!added.spliced) {
    for (const std::string& p : part_paths) {
      RETURN_IF_ERROR(WithAttached(out, p, "part", [&]() -> rs::Result<void> {
        for (const std::string& t : EventTables()) {
          // A bare SELECT * of an identically defined table: SQLite's transfer optimization.
          auto r = out.Exec("INSERT INTO main.\"" + t + "\" SELECT * FROM part.\"" + t + "\"");
          if (!r.ok()) return r.error().Wrap("combining table " + t);
        }
        return rs::Ok();
      }));
    }
  }
  // Rows in = rows out, whichever way they came.
  for (const std::string& t : EventTables()) {
    auto e = expected_rows.find(t);
    const int64_t want = e == expected_rows.end() ? 0 : e->second;
    // Spliced: the rows the splice put into the table's leaves (its unit tests check that
    // SQLite counts the same); transferred: SQLite's count.
    int64_t got = 0;
    if (added.spliced) {
      auto r = added.splice.table_rows.find(t);
      got = r == added.splice.table_rows.end() ? -1 : r->second;
    } else {
      ASSIGN_OR_RETURN(got, out.QueryInt("SELECT COUNT(*) FROM main.\"" + t + "\""));
    }
    if (got != want) {
      return rs::Error("internal error: table " + t + " of the output holds " +
                       std::to_string(got) + " rows, the parts " + std::to_string(want) +
                       (added.spliced ? " (spliced)" : " (transferred)"));
    }
  }
  return added;
}

PartPipeline::PartPipeline(std::vector<Job> jobs, int threads, std::string dir, std::string stem)
    : jobs_(std::move(jobs)), dir_(std::move(dir)), stem_(std::move(stem)), done_(jobs_.size()) {
  for (int t = 0; t < threads; ++t) threads_.emplace_back([this] { Work(); });
}

PartPipeline::~PartPipeline() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void PartPipeline::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_.wait(
        lock, [&] { return (!closing_ && next_ < jobs_.size()) || !garbage_.empty() || closing_; });
    if (!closing_ && next_ < jobs_.size()) {
      size_t i = next_++;
      lock.unlock();
      auto part = WritePart(dir_, stem_, *jobs_[i].input, jobs_[i].alignment, jobs_[i].pages);
      lock.lock();
      done_[i].emplace(std::move(part));
      finished_.notify_all();
    } else if (!garbage_.empty()) {
      std::shared_ptr<void> g = std::move(garbage_.front());
      garbage_.pop_front();
      lock.unlock();
      g.reset();
      lock.lock();
    } else {
      return;  // closing, nothing left to remove
    }
  }
}

rs::Result<Part> PartPipeline::Take(size_t i) {
  if (threads_.empty()) return rs::Error("no thread writes parts (internal error)");
  std::unique_lock<std::mutex> lock(mu_);
  finished_.wait(lock, [&] { return done_[i].has_value(); });
  rs::Result<Part> part = std::move(*done_[i]);
  done_[i].reset();
  return part;
}

void PartPipeline::Discard(std::shared_ptr<void> garbage) {
  if (threads_.empty()) return;  // destroyed here, now
  {
    std::lock_guard<std::mutex> lock(mu_);
    garbage_.push_back(std::move(garbage));
  }
  work_.notify_one();
}

}  // namespace merge
