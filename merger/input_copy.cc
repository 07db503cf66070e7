#include "merger/input_copy.h"
#include "merger/table_copy.h"

#include <set>
#include <utility>

#include "merger/stack_dedup.h"
#include "rscore/schema.h"

namespace rs::merge {
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
  std::vector<std::string> out;
  for (std::string_view t : rs::kEventTables) out.emplace_back(t);
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

rs::Result<InputCopy> CopyInput(rs::Db& db, const Input& in, const NodeAlignment& al) {
  ASSIGN_OR_RETURN(std::string image, ReopenInput(in));
  // The input's rows are read on this connection: its limits (time, value size, no views or
  // triggers, untrusted schema) hold for all of it, and errors name the input.
  RETURN_IF_ERROR(db.GuardInput(in.file));
  return WithAttached(db, image, "src", [&]() -> rs::Result<InputCopy> {
    InputCopy copy;
    ASSIGN_OR_RETURN(StackCounts sc, MergeStacks(db, "src"));
    copy.stack_rows = sc.rows_in;
    RETURN_IF_ERROR(RecordStackOrigins(db, in.input_id, "SELECT DISTINCT new FROM temp.stack_map"));
    CopySpec spec{"src", in.node, in.original_node, in.id_shift, al, {}};
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

rs::Result<Part> WritePart(const std::string& dir, const std::string& stem, const Input& in,
                           const NodeAlignment& al) {
  Part part;
  ASSIGN_OR_RETURN(part.file, rs::TempFile::CreateUnnamed(dir, stem));
  ASSIGN_OR_RETURN(rs::Db db, rs::Db::Open(part.file.path(), rs::Db::Mode::kReadWrite));
  RETURN_IF_ERROR(UseBuildPragmas(db, 16384));
  RETURN_IF_ERROR(rs::CreateSchema(db, rs::DbKind::kMerged));
  ASSIGN_OR_RETURN(part.copy, CopyInput(db, in, al));
  return part;
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

rs::Result<void> AddEventTables(rs::Db& out, const std::vector<const Part*>& parts,
                                const std::map<std::string, int64_t>& expected_rows) {
  for (const Part* p : parts) {
    RETURN_IF_ERROR(WithAttached(out, p->file.path(), "part", [&]() -> rs::Result<void> {
      for (const std::string& t : EventTables()) {
        // A bare SELECT * of an identically defined table: SQLite's transfer optimization.
        auto r = out.Exec("INSERT INTO main.\"" + t + "\" SELECT * FROM part.\"" + t + "\"");
        if (!r.ok()) return r.error().Wrap("combining table " + t);
      }
      return rs::Ok();
    }));
  }
  // Rows in = rows out.
  for (const std::string& t : EventTables()) {
    auto e = expected_rows.find(t);
    const int64_t want = e == expected_rows.end() ? 0 : e->second;
    ASSIGN_OR_RETURN(int64_t got, out.QueryInt("SELECT COUNT(*) FROM main.\"" + t + "\""));
    if (got != want) {
      return rs::Error("internal error: table " + t + " of the output holds " +
                       std::to_string(got) + " rows, the parts " + std::to_string(want));
    }
  }
  return rs::Ok();
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
      auto part = WritePart(dir_, stem_, *jobs_[i].input, jobs_[i].alignment);
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

}  // namespace rs::merge
