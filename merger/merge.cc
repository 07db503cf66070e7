#include "merge.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iomanip>
#include <map>
#include <utility>

#include "inputs.h"
#include "rendezvous.h"
#include "rscore/bundle.h"
#include "rscore/schema.h"
#include "rscore/sqlite.h"
#include "rscore/zstd_file.h"
#include "stack_dedup.h"
#include "table_copy.h"

namespace merge {
namespace {

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsEventTable(const std::string& t) {
  for (std::string_view e : rs::kEventTables) {
    if (e == t) return true;
  }
  return false;
}

// The output: a private temp file next to OUT, renamed into place when complete.
rs::Result<void> CheckOutputPath(const std::string& out) {
  if (out.empty()) return rs::Error("-o/--out: an output path is required (e.g. -o run.rsdb)");
  struct stat st {};
  std::string dir = DirOf(out);
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return rs::Error("-o " + out + ": directory '" + dir + "' does not exist");
  }
  if (access(dir.c_str(), W_OK) != 0) {
    return rs::Error("-o " + out + ": directory '" + dir + "' is not writable");
  }
  if (stat(out.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return rs::Error("-o " + out + ": is a directory; give a file name such as merged.rsdb");
  }
  return rs::Ok();
}

rs::Result<void> MoveIntoPlace(const std::string& from, const std::string& to) {
  if (chmod(from.c_str(), 0600) != 0 || rename(from.c_str(), to.c_str()) != 0) {
    return rs::Error(to + ": cannot move the merged database into place: " + std::strerror(errno));
  }
  return rs::Ok();
}

class Progress {
 public:
  Progress(bool on, std::ostream& log) : on_(on), log_(log) {}
  void Show(const std::string& line) {
    if (on_) log_ << "\r\033[K" << line << std::flush;
  }
  void Done() {
    if (on_) log_ << "\r\033[K" << std::flush;
  }

 private:
  bool on_;
  std::ostream& log_;
};

rs::Result<void> WriteAlignment(rs::Db& db, const std::vector<NodeAlignment>& al) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("INSERT INTO clock_alignment(node, offset_ns, drift_ppm, anchor_ns,"
                              " error_bound_ns, method, rendezvous_count, note)"
                              " VALUES (?,?,?,?,?,?,?,?)"));
  for (const NodeAlignment& a : al) {
    RETURN_IF_ERROR(st.Bind(1, a.node)
                        .Bind(2, a.offset_ns)
                        .Bind(3, a.drift_ppm)
                        .Bind(4, a.anchor_ns)
                        .Bind(5, a.error_bound_ns)
                        .Bind(6, a.method)
                        .Bind(7, a.rendezvous_count)
                        .Bind(8, a.note)
                        .Run());
  }
  return rs::Ok();
}

rs::Result<void> SetMeta(rs::Db& db, const std::string& key, const std::string& value) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)"));
  return st.Bind(1, key).Bind(2, value).Run();
}

// Copies one input (attached as 'src') in one transaction; returns its counts.
rs::Result<std::vector<TableCount>> CopyAttached(rs::Db& out, const Input& in,
                                                 const NodeAlignment& al) {
  RETURN_IF_ERROR(out.Exec("BEGIN"));
  auto body = [&]() -> rs::Result<std::vector<TableCount>> {
    ASSIGN_OR_RETURN(StackCounts sc, MergeStacks(out, "src"));
    CopySpec spec{"src", in.node, in.original_node, in.id_shift, al};
    ASSIGN_OR_RETURN(std::vector<TableCount> counts, CopyTables(out, spec));
    counts.push_back(TableCount{"stacks", sc.rows_in, sc.inserted, sc.deduped,
                                sc.deduped ? "already present (deduplicated by frames hash)" : ""});
    // Per-node metadata under 'node.<name>.'; recording times aligned, originals kept.
    ASSIGN_OR_RETURN(int64_t meta_in, out.QueryInt("SELECT COUNT(*) FROM src.metadata"));
    ASSIGN_OR_RETURN(rs::Statement meta,
                     out.Prepare("INSERT OR REPLACE INTO main.metadata(key, value)"
                                 " SELECT 'node.' || ?1 || '.' || key, value FROM src.metadata"));
    RETURN_IF_ERROR(meta.Bind(1, in.node).Run());
    counts.push_back(TableCount{"metadata", meta_in, meta_in, 0, ""});
    const rs::BundleInfo& info = in.info;
    std::string p = "node." + in.node + ".";
    RETURN_IF_ERROR(SetMeta(out, p + "start_ns", std::to_string(al.Apply(info.start_ns))));
    RETURN_IF_ERROR(SetMeta(out, p + "end_ns", std::to_string(al.Apply(info.end_ns))));
    RETURN_IF_ERROR(SetMeta(out, p + "local_start_ns", std::to_string(info.start_ns)));
    RETURN_IF_ERROR(SetMeta(out, p + "local_end_ns", std::to_string(info.end_ns)));
    return counts;
  };
  auto counts = body();
  if (!counts.ok()) {
    (void)out.Exec("ROLLBACK");
    return counts.error();
  }
  RETURN_IF_ERROR(out.Exec("COMMIT"));
  return counts;
}

// Opens the input again, attaches it and copies it.
rs::Result<std::vector<TableCount>> CopyInput(rs::Db& out, const Input& in,
                                              const NodeAlignment& al) {
  ASSIGN_OR_RETURN(rs::OpenedDb opened, ReopenInput(in));
  ASSIGN_OR_RETURN(rs::Statement attach, out.Prepare("ATTACH DATABASE ? AS src"));
  RETURN_IF_ERROR(attach.Bind(1, opened.sqlite_path()).Run());
  auto counts = CopyAttached(out, in, al);
  RETURN_IF_ERROR(out.Exec("DETACH DATABASE src"));
  return counts;
}

// merge_inputs, merge_counts, clock_alignment and the merged db's own metadata.
rs::Result<void> WriteMergeTables(rs::Db& out, const std::vector<Input>& inputs,
                                  const std::map<int, std::vector<TableCount>>& counts,
                                  const std::vector<NodeAlignment>& alignment,
                                  const MergeResult& result) {
  ASSIGN_OR_RETURN(rs::Statement ins,
                   out.Prepare("INSERT INTO merge_inputs(input_id, file, recording_id, node,"
                               " original_node, status, reason) VALUES (?,?,?,?,?,?,?)"));
  for (const Input& in : inputs) {
    ins.Bind(1, in.input_id).Bind(2, in.file).Bind(6, in.status);
    if (!in.recording_id.empty()) ins.Bind(3, in.recording_id);
    if (!in.node.empty()) ins.Bind(4, in.node);
    if (!in.original_node.empty()) ins.Bind(5, in.original_node);
    if (!in.reason.empty()) ins.Bind(7, in.reason);
    RETURN_IF_ERROR(ins.Run());
    sqlite3_clear_bindings(ins.raw());
  }
  ASSIGN_OR_RETURN(rs::Statement cnt,
                   out.Prepare("INSERT INTO merge_counts(input_id, table_name, rows_in, rows_out,"
                               " rows_skipped) VALUES (?,?,?,?,?)"));
  for (const auto& [id, list] : counts) {
    for (const TableCount& c : list) {
      RETURN_IF_ERROR(cnt.Bind(1, id)
                          .Bind(2, c.table)
                          .Bind(3, c.rows_in)
                          .Bind(4, c.rows_out)
                          .Bind(5, c.rows_skipped)
                          .Run());
    }
  }
  RETURN_IF_ERROR(WriteAlignment(out, alignment));
  ASSIGN_OR_RETURN(auto s, out.QueryText("SELECT MIN(CAST(value AS INTEGER)) FROM metadata"
                                         " WHERE key LIKE 'node.%.start_ns' AND key NOT LIKE "
                                         "'node.%.local_start_ns'"));
  ASSIGN_OR_RETURN(auto e, out.QueryText("SELECT MAX(CAST(value AS INTEGER)) FROM metadata"
                                         " WHERE key LIKE 'node.%.end_ns' AND key NOT LIKE "
                                         "'node.%.local_end_ns'"));
  RETURN_IF_ERROR(SetMeta(out, "start_ns", s.value_or("0")));
  RETURN_IF_ERROR(SetMeta(out, "end_ns", e.value_or("0")));
  RETURN_IF_ERROR(SetMeta(out, "merged_inputs", std::to_string(result.merged)));
  RETURN_IF_ERROR(SetMeta(out, "skipped_inputs", std::to_string(result.skipped)));
  for (const NodeAlignment& a : alignment) {
    if (a.method == "reference") RETURN_IF_ERROR(SetMeta(out, "clock_reference", a.node));
  }
  return rs::Ok();
}

void PrintCounts(std::ostream& log, const Input& in, const std::vector<TableCount>& counts) {
  log << "rankscope-merge: input " << in.input_id << " " << in.file << " -> node " << in.node
      << "\n";
  for (const TableCount& c : counts) {
    if (c.rows_in == 0 && c.rows_out == 0) continue;
    log << "  " << std::left << std::setw(16) << c.table << std::right << " in " << std::setw(9)
        << c.rows_in << "  out " << std::setw(9) << c.rows_out << "  skipped " << std::setw(7)
        << c.rows_skipped << (c.note.empty() ? "" : "  (" + c.note + ")") << "\n";
  }
}

}  // namespace

rs::Result<MergeResult> Merge(const MergeOptions& opt, std::ostream& log) {
  RETURN_IF_ERROR(CheckOutputPath(opt.out_path));
  if (opt.inputs.empty()) {
    return rs::Error("no inputs: give node bundles (NODE.rsb) or a directory holding them");
  }
  ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandInputs(opt.inputs));
  Progress progress(opt.progress, log);
  progress.Show("validating " + std::to_string(files.size()) + " inputs...");
  std::vector<Input> inputs = PlanInputs(files, log);
  progress.Done();
  MergeResult result;
  std::vector<Input*> merged;
  std::string skipped_list;
  for (Input& in : inputs) {
    if (in.status == "merged") merged.push_back(&in);
    if (in.status == "skipped") {
      ++result.skipped;
      skipped_list += "\n  " + in.file + ": " + in.reason;
    }
    if (in.status == "duplicate") ++result.duplicates;
  }
  if (opt.strict && result.skipped > 0) {
    return rs::Error("--strict: " + std::to_string(result.skipped) +
                     " input(s) failed validation, nothing written:" + skipped_list);
  }
  if (merged.empty()) {
    return rs::Error("nothing merged: no valid input among " + std::to_string(files.size()) +
                     " file(s)" + skipped_list);
  }

  // Clock alignment from the rendezvous of all merged inputs.
  RendezvousCollector collector;
  std::vector<NodeClock> clocks;
  int reference = -1;
  for (size_t i = 0; i < merged.size(); ++i) {
    Input& in = *merged[i];
    collector.Absorb(in.rendezvous, static_cast<int>(i));
    clocks.push_back(NodeClock{in.node, in.info.start_ns, in.maxerror_ns});
    if (in.node == opt.reference_node) reference = static_cast<int>(i);
  }
  if (!opt.reference_node.empty() && reference < 0) {
    std::string names;
    for (const NodeClock& c : clocks) names += (names.empty() ? "" : ", ") + c.name;
    return rs::Error("--reference " + opt.reference_node + ": no merged input has that node (" +
                     names + ")");
  }
  progress.Show("aligning clocks...");
  std::vector<Rendezvous> rz = collector.Take();
  result.alignment = AlignClocks(clocks, rz, reference, opt.align);

  // The output, built in a temp file next to it.
  ASSIGN_OR_RETURN(rs::TempFile tmp,
                   rs::TempFile::Create(DirOf(opt.out_path), BaseOf(opt.out_path)));
  ASSIGN_OR_RETURN(rs::Db out, rs::Db::Open(tmp.path(), rs::Db::Mode::kReadWrite));
  RETURN_IF_ERROR(
      out.Exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
               " PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-65536;"
               " PRAGMA temp_store=MEMORY; PRAGMA threads=2;"));
  RETURN_IF_ERROR(rs::CreateSchema(out, rs::DbKind::kMerged));
  std::map<int, std::vector<TableCount>> counts;
  for (size_t i = 0; i < merged.size(); ++i) {
    Input& in = *merged[i];
    progress.Show("[" + std::to_string(i + 1) + "/" + std::to_string(merged.size()) + "] merging " +
                  in.file);
    auto c = CopyInput(out, in, result.alignment[i]);
    progress.Done();
    if (!c.ok()) {
      // The input validated but could not be copied (changed since, or lacks a NOT NULL
      // column this version needs).
      in.status = "skipped";
      in.reason = "copy failed: " + c.error().message();
      ++result.skipped;
      log << "rankscope-merge: skipping " << in.file << ": " << in.reason << "\n";
      if (opt.strict) return rs::Error("--strict: " + in.file + ": " + in.reason);
      continue;
    }
    PrintCounts(log, in, c.value());
    for (const TableCount& t : c.value()) {
      if (IsEventTable(t.table)) result.event_rows += t.rows_out;
    }
    counts[in.input_id] = std::move(c).value();
  }
  if (counts.empty()) return rs::Error("nothing merged: every valid input failed to copy");
  // A repeated recording: its rows are all there once already; counted as skipped.
  for (const Input& in : inputs) {
    if (in.status != "duplicate") continue;
    std::vector<TableCount>& list = counts[in.input_id];
    for (const auto& [table, rows] : in.table_rows) {
      list.push_back(TableCount{table, rows, 0, rows,
                                "same recording as input " + std::to_string(in.duplicate_of)});
    }
    PrintCounts(log, in, list);
  }

  for (const Input& in : inputs) {
    result.inputs.push_back(InputSummary{in.input_id, in.file, in.node, in.status, in.reason});
    if (in.status == "merged") ++result.merged;
  }
  // Only nodes that were actually copied keep an alignment row.
  std::vector<NodeAlignment> written;
  for (size_t i = 0; i < merged.size(); ++i) {
    if (merged[i]->status == "merged") written.push_back(result.alignment[i]);
  }
  result.alignment = written;
  RETURN_IF_ERROR(out.Exec("BEGIN"));
  RETURN_IF_ERROR(WriteMergeTables(out, inputs, counts, written, result));
  RETURN_IF_ERROR(out.Exec("COMMIT"));
  progress.Show("building indexes...");
  RETURN_IF_ERROR(rs::CreateIndexes(out));
  progress.Done();
  out = rs::Db();  // close before the rename
  if (opt.bundle_path) {
    std::string partial = *opt.bundle_path + ".partial";
    auto c = rs::CompressFile(tmp.path(), partial, 9, 0600);
    if (!c.ok() || rename(partial.c_str(), opt.bundle_path->c_str()) != 0) {
      unlink(partial.c_str());
      return c.ok() ? rs::Error("--bundle " + *opt.bundle_path +
                                ": cannot move into place: " + std::strerror(errno))
                    : c.error().Wrap("--bundle");
    }
  }
  RETURN_IF_ERROR(MoveIntoPlace(tmp.path(), opt.out_path));
  tmp.Release();
  return result;
}

}  // namespace merge
