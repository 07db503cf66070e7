#include "merger/merge.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "merger/clock_bound_warnings.h"
#include "merger/fr_import.h"
#include "merger/input_copy.h"
#include "merger/inputs.h"
#include "merger/merge_tables.h"
#include "merger/rendezvous.h"
#include "merger/split_ranks.h"
#include "merger/stack_dedup.h"
#include "merger/table_copy.h"
#include "merger/wire_clock_check.h"
#include "rscore/bundle.h"
#include "rscore/comm_hash.h"
#include "rscore/duration.h"
#include "rscore/output.h"
#include "rscore/path.h"
#include "rscore/schema.h"
#include "rscore/sqlite.h"
#include "rscore/text_escape.h"
#include "rscore/zstd_file.h"

namespace rs::merge {
namespace {

using rs::BaseOf;

// The merged database and its --bundle copy: never readable by more than its owner.
constexpr mode_t kMergedMode = 0600;

// A disk (or quota) that filled up, said by SQLite or by a write of rankscope's own: the merge
// cannot go on, whichever input it was copying.
bool NoSpace(const rs::Error& e) { return e.Is(rs::ErrorKind::kNoSpace); }

class Progress {
 public:
  // On a terminal one line redrawn in place; elsewhere (a log) plain lines. Either is
  // prefixed like every other line of the tool.
  Progress(bool on, bool plain, std::ostream& log) : on_(on), plain_(plain), log_(log) {}
  void Show(const std::string& line) {
    if (!on_) return;
    if (plain_) {
      log_ << "rankscope-merge: " << line << "\n" << std::flush;
    } else {
      log_ << "\r\033[Krankscope-merge: " << line << std::flush;
    }
  }
  void Done() {
    if (on_ && !plain_) log_ << "\r\033[K" << std::flush;
  }

 private:
  bool on_, plain_;
  std::ostream& log_;
};

class PhaseTimer {
 public:
  PhaseTimer() : last_(Now()) {}
  void End(const std::string& phase) {
    PhaseTime now = Now();
    phases_.push_back(PhaseTime{phase, now.wall_s - last_.wall_s, now.cpu_s - last_.cpu_s});
    last_ = now;
  }
  std::vector<PhaseTime> Take() { return std::move(phases_); }

 private:
  static PhaseTime Now() {
    timespec wall{}, cpu{};
    clock_gettime(CLOCK_MONOTONIC, &wall);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);  // all threads
    return PhaseTime{"", wall.tv_sec + wall.tv_nsec * 1e-9, cpu.tv_sec + cpu.tv_nsec * 1e-9};
  }
  PhaseTime last_;
  std::vector<PhaseTime> phases_;
};

// How each communicator's calls were judged and what the rendezvous rest on.
void LogEvidence(std::ostream& log, const RendezvousSummary& summary) {
  constexpr size_t kShown = 8;
  for (size_t i = 0; i < summary.communicators.size(); ++i) {
    const rs::CommunicatorCallMode& c = summary.communicators[i];
    if (i == kShown) {
      log << "rankscope-merge: ... and " << summary.communicators.size() - kShown
          << " more communicators\n";
      break;
    }
    static constexpr const char* kSays[] = {"calls block", "calls only enqueue",
                                            "calls judged by process"};
    log << "rankscope-merge: communicator " << rs::HashHex(c.comm_id_hash) << ": "
        << kSays[static_cast<int>(c.decision.mode)] << ": " << c.decision.evidence << "\n";
  }
  const std::string kinds = EvidenceSummary(summary.by_evidence);
  log << "rankscope-merge: rendezvous evidence (node observations): "
      << (kinds.empty() ? "none" : kinds);
  if (summary.dropped > 0) {
    log << "; " << summary.dropped
        << " dropped (a node's exit before its own entry: an assumption of the evidence failed)";
  }
  log << "\n";
}

}  // namespace

void ConfigureSqlite() {
  // Inputs and parts are read through memory maps rather than read() copies (up to 256 MiB of
  // each; a thread has at most one input and one part open), and SQLite skips its global
  // allocation statistics (a mutex on every allocation).
  sqlite3_config(SQLITE_CONFIG_MMAP_SIZE, sqlite3_int64{256} << 20, sqlite3_int64{256} << 20);
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

namespace {

// An input that shares no communicator and no time with any other merged input is most
// likely another job's (an old bundle a glob picked up): said loudly, refused with --strict.
rs::Result<void> WarnForeignInputs(const std::vector<Input*>& merged, bool strict,
                                   MergeResult& result) {
  if (merged.size() < 2) return rs::Ok();
  std::vector<std::set<int64_t>> comms;
  for (Input* in : merged) comms.push_back(in->rendezvous.Communicators());
  std::string foreign_list;
  for (size_t i = 0; i < merged.size(); ++i) {
    bool shares = false;
    for (size_t j = 0; j < merged.size() && !shares; ++j) {
      if (i == j) continue;
      const Input& a = *merged[i];
      const Input& b = *merged[j];
      const bool overlap = a.info.start_ns <= b.info.end_ns && b.info.start_ns <= a.info.end_ns;
      const bool common = std::any_of(comms[i].begin(), comms[i].end(),
                                      [&](int64_t c) { return comms[j].count(c) > 0; });
      shares = overlap || common;
    }
    if (shares) continue;
    Input& in = *merged[i];
    const std::string why =
        "shares no communicator and no recording time with the other "
        "inputs: another job's bundle?";
    in.reason += (in.reason.empty() ? "" : "; ") + why;
    result.warnings.push_back(in.file + " (node " + in.node + ") " + why +
                              " Its lateness is compared with theirs only if it belongs.");
    foreign_list += "\n  " + in.file + " (node " + in.node + ")";
  }
  if (strict && !foreign_list.empty()) {
    return rs::Error(
        "--strict: input(s) sharing no communicator and no recording time with "
        "the others, nothing written:" +
        foreign_list);
  }
  return rs::Ok();
}

// The clock offsets rankscope-fleet collect measured over the wire (clock_offsets.json beside
// the inputs), when there are any, against the alignment: agreements are logged, each
// disagreement is a warning; both are noted in clock_alignment.note and the metadata.
void CheckAgainstWireClocks(const std::vector<std::string>& inputs, std::ostream& log,
                            MergeResult& result) {
  std::vector<std::string> files;
  auto wire = ReadWireClocksBeside(inputs, files);
  if (!wire.ok()) {
    result.warnings.push_back(wire.error().message() + " (no wire clock check)");
    return;
  }
  if (files.empty()) return;
  int agree = 0, disagree = 0;
  for (const WireClockCheck& c : CheckWireClocks(result.alignment, *wire)) {
    for (NodeAlignment& a : result.alignment) {
      if (a.node == c.node) a.note += (a.note.empty() ? "" : "; ") + c.note;
    }
    if (c.agrees) {
      ++agree;
      log << "rankscope-merge: node " << rs::EscapeText(c.node) << ": " << rs::EscapeText(c.note)
          << "\n";
    } else {
      ++disagree;
      result.warnings.push_back("node " + c.node + ": " + c.note +
                                ": the rendezvous alignment or the wire measurement is off, or "
                                "the clocks moved between the recording and the collection");
    }
  }
  result.wire_clock_check = std::to_string(agree) + " agree, " + std::to_string(disagree) +
                            " disagree (" + std::to_string(wire->size()) + " wire clocks in " +
                            files.front() + (files.size() > 1 ? " and others" : "") + ")";
}

// Every merged node's clock aligned on the rendezvous of all inputs (result.alignment, in
// `merged` order); nodes aligned by their wall clock only are warned about.
rs::Result<void> AlignMerged(const std::vector<Input*>& merged, const MergeOptions& opt,
                             Progress& progress, std::ostream& log, MergeResult& result) {
  RendezvousCollector collector;
  std::vector<NodeClock> clocks;
  int reference = -1;
  for (size_t i = 0; i < merged.size(); ++i) {
    Input& in = *merged[i];
    collector.Absorb(std::move(in.rendezvous), static_cast<int>(i));
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
  progress.Done();
  for (const NodeAlignment& a : result.alignment) {
    if (a.method != "wall_clock") continue;
    result.warnings.push_back("node " + a.node +
                              ": no rendezvous with the other nodes, its clock "
                              "is aligned by its wall clock only (error up to +-" +
                              rs::FormatDuration(a.error_bound_ns) +
                              "): comparisons of its times with other nodes' are uncertain" +
                              (a.note.empty() ? "" : " (" + a.note + ")"));
  }
  LogEvidence(log, collector.summary());
  result.call_modes = collector.summary().communicators;
  CheckAgainstWireClocks(opt.inputs, log, result);
  return rs::Ok();
}

// Inputs that validated, copied in order of their first recording key so that every input
// appends to the merged tables.
std::vector<size_t> CopyOrder(const std::vector<Input*>& merged) {
  std::vector<size_t> order(merged.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto &ka = merged[a]->first_key, &kb = merged[b]->first_key;
    if (ka.has_value() != kb.has_value()) return ka.has_value();
    return ka.has_value() && *ka < *kb;
  });
  return order;
}

// One merge, in phases: Plan (validate, refuse what --strict refuses, align clocks) ->
// OpenOutput -> CopyInputs -> AddPartEventTables -> DeriveSplits -> ImportDumps ->
// WriteMergeSummary -> WriteOut.
class MergeRun {
 public:
  MergeRun(const MergeOptions& opt, std::ostream& log, rs::OutputFile& out_file)
      : opt_(opt),
        log_(log),
        out_file_(out_file),
        progress_(opt.progress, opt.progress_plain, log) {}

  rs::Result<void> Plan();
  rs::Result<void> OpenOutput();
  rs::Result<void> CopyInputs();
  rs::Result<void> DeriveSplits();  // split communicators' ranks (split_ranks.h)
  rs::Result<void> AddPartEventTables();
  rs::Result<void> ImportDumps();
  rs::Result<void> WriteMergeSummary();
  rs::Result<MergeResult> WriteOut();

 private:
  // Copies input `k` of the copy order: directly, or by combining its part.
  rs::Result<InputCopy> CopyOne(size_t k);

  const MergeOptions& opt_;
  std::ostream& log_;
  rs::OutputFile& out_file_;
  Progress progress_;
  PhaseTimer timer_;
  std::optional<rs::OutputTarget> target_, bundle_target_;
  std::vector<Input> inputs_;
  std::vector<Input*> merged_;
  MergeResult result_;
  rs::Db out_;
  std::vector<size_t> order_;
  size_t direct_ = 0;  // inputs copied by the writer itself; the rest come as parts
  std::optional<PartPipeline> parts_;
  std::map<int, InputCopy> copies_;
  std::vector<std::pair<int, Part>> kept_;  // parts whose event tables are still to add
  std::map<int, std::vector<TableCount>> counts_;
  FrPlan fr_;                                           // Flight Recorder dumps among the inputs
  std::optional<std::pair<int64_t, int64_t>> fr_span_;  // the span when dumps are all there is
};

rs::Result<void> MergeRun::Plan() {
  ASSIGN_OR_RETURN(target_, rs::CheckOutput(opt_.out_path, opt_.force, opt_.inputs, kMergedMode));
  if (opt_.bundle_path) {
    ASSIGN_OR_RETURN(bundle_target_,
                     rs::CheckOutput(*opt_.bundle_path, opt_.force, opt_.inputs, kMergedMode));
  }
  if (opt_.inputs.empty()) {
    return rs::Error("no inputs: give node bundles (NODE.rsb) or a directory holding them");
  }
  ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandInputs(opt_.inputs));
  const size_t given = files.size();
  progress_.Show("validating " + std::to_string(given) + " inputs...");
  fr_ = PlanFlightRecorder(files, /*first_id=*/1, log_);
  inputs_ = PlanInputs(files, log_);
  // ImportDumps appends the dumps' inputs; merged_ (below) points into inputs_.
  inputs_.reserve(inputs_.size() + fr_.inputs.size());
  // Dumps after the bundles in merge_inputs.
  for (Input& in : fr_.inputs) in.input_id += static_cast<int>(inputs_.size());
  for (FrInput& d : fr_.dumps) d.input_id += static_cast<int>(inputs_.size());
  progress_.Done();
  for (const Input& in : inputs_) {
    // No room for the decompressed copies: every later input would fail alike.
    if (in.status == "skipped" && in.reason_kind == rs::ErrorKind::kNoSpace) {
      return rs::Error("no space left on device for temporary files: " + in.file + ": " + in.reason,
                       in.reason_kind);
    }
  }
  std::string skipped_list;
  for (Input& in : inputs_) {
    if (in.status == "merged") merged_.push_back(&in);
    if (in.status == "skipped") {
      ++result_.skipped;
      skipped_list += "\n  " + in.file + ": " + in.reason;
    }
    if (in.status == "duplicate") ++result_.duplicates;
  }
  for (const Input& in : fr_.inputs) {
    if (in.status == "skipped") skipped_list += "\n  " + in.file + ": " + in.reason;
  }
  result_.skipped += fr_.skipped;
  for (const std::string& w : fr_.warnings) result_.warnings.push_back(w);
  if (opt_.strict && result_.skipped > 0) {
    return rs::Error("--strict: " + std::to_string(result_.skipped) +
                     " input(s) failed validation, nothing written:" + skipped_list);
  }
  if (merged_.empty() && fr_.dumps.empty()) {
    return rs::Error("nothing merged: no valid input among " + std::to_string(given) + " file(s)" +
                     skipped_list);
  }
  if (merged_.empty()) return rs::Ok();  // Flight Recorder dumps only: no clocks to align
  RETURN_IF_ERROR(WarnForeignInputs(merged_, opt_.strict, result_));
  return AlignMerged(merged_, opt_, progress_, log_, result_);
}

rs::Result<void> MergeRun::OpenOutput() {
  // The output, built in a temporary without a name next to it (rscore/output.h).
  ASSIGN_OR_RETURN(out_file_, rs::OutputFile::Create(*target_));
  ASSIGN_OR_RETURN(out_, rs::Db::Open(out_file_.path(), rs::Db::Mode::kReadWrite));
  RETURN_IF_ERROR(UseBuildPragmas(out_, 65536));
  // Read through the page cache, not a map: mapped pages of a large output would count
  // against the process like its own memory.
  RETURN_IF_ERROR(out_.Exec("PRAGMA mmap_size=0"));
  RETURN_IF_ERROR(rs::CreateSchema(out_, rs::DbKind::kMerged));
  timer_.End("validate and align");
  return rs::Ok();
}

rs::Result<InputCopy> MergeRun::CopyOne(size_t k) {
  Input& in = *merged_[order_[k]];
  if (k < direct_) return CopyInput(out_, in, result_.alignment[order_[k]]);
  ASSIGN_OR_RETURN(Part part, parts_->Take(k - direct_));
  auto combined = CombinePart(out_, in, part);
  if (!combined.ok()) {
    parts_->Discard(std::make_shared<rs::TempFile>(std::move(part.file)));
    return combined.error();
  }
  InputCopy copy = std::move(part.copy);
  kept_.emplace_back(in.input_id, std::move(part));
  return copy;
}

rs::Result<void> MergeRun::CopyInputs() {
  if (merged_.empty()) return rs::Ok();
  order_ = CopyOrder(merged_);
  // With copy threads every input is copied into a part; the writer combines each part's small
  // tables as it arrives and adds the event tables of all of them at the end. Without, the
  // writer copies every input itself.
  const int threads = opt_.worker_threads >= 0
                          ? opt_.worker_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  direct_ = threads > 0 ? 0 : order_.size();
  std::vector<PartPipeline::Job> jobs;
  for (size_t k = direct_; k < order_.size(); ++k) {
    jobs.push_back({merged_[order_[k]], result_.alignment[order_[k]]});
  }
  parts_.emplace(std::move(jobs), threads, out_file_.dir(), BaseOf(opt_.out_path) + ".part");

  for (size_t k = 0; k < order_.size(); ++k) {
    Input& in = *merged_[order_[k]];
    progress_.Show("[" + std::to_string(k + 1) + "/" + std::to_string(order_.size()) +
                   "] merging " + rs::EscapeText(in.file));
    rs::Result<InputCopy> c = CopyOne(k);
    parts_->Discard(std::move(in.image));  // its temp file is no longer needed
    progress_.Done();
    if (!c.ok()) {
      if (NoSpace(c.error())) return c.error();  // said as such by Merge
      // The input validated but could not be copied (changed since, or lacks a NOT NULL
      // column this version needs).
      in.status = "skipped";
      in.reason = "copy failed: " + c.error().message();
      ++result_.skipped;
      log_ << "rankscope-merge: skipping " << rs::EscapeText(in.file) << ": "
           << rs::EscapeText(in.reason) << "\n";
      if (opt_.strict) return rs::Error("--strict: " + in.file + ": " + in.reason);
      continue;
    }
    copies_[in.input_id] = std::move(c).value();
  }
  timer_.End("copy (" + std::to_string(direct_) + " direct, " +
             std::to_string(order_.size() - direct_) + " parts)");
  return rs::Ok();
}

rs::Result<void> MergeRun::AddPartEventTables() {
  if (merged_.empty()) return rs::Ok();
  // Which input's stacks reached the output first (temp tables of the output's connection).
  ASSIGN_OR_RETURN(auto first_held, StacksFirstHeld(out_));
  if (!kept_.empty()) {
    progress_.Show("adding the event tables of " + std::to_string(kept_.size()) + " parts...");
    std::vector<const Part*> part_list;
    std::map<std::string, int64_t> expected;
    for (const auto& [id, part] : kept_) {
      part_list.push_back(&part);
      for (const TableCount& t : copies_[id].counts) {
        if (rs::IsEventTable(t.table)) expected[t.table] += t.rows_out;
      }
    }
    RETURN_IF_ERROR(AddEventTables(out_, part_list, expected));
    for (auto& [id, part] : kept_) {
      parts_->Discard(std::make_shared<rs::TempFile>(std::move(part.file)));
    }
    progress_.Done();
    timer_.End("event tables");
  }
  counts_ = InputCounts(copies_, first_held, result_);
  return rs::Ok();
}

rs::Result<void> MergeRun::DeriveSplits() {
  if (merged_.empty()) return rs::Ok();
  ASSIGN_OR_RETURN(rs::Transaction tx, rs::Transaction::Begin(out_));
  ASSIGN_OR_RETURN(SplitRanksResult splits, DeriveSplitRanks(out_));
  RETURN_IF_ERROR(tx.Commit());
  for (std::string& w : splits.warnings) result_.warnings.push_back(std::move(w));
  if (splits.communicators > 0) {
    timer_.End("split communicators (" + std::to_string(splits.communicators) + ", " +
               std::to_string(splits.rows) + " rows)");
  }
  return rs::Ok();
}

rs::Result<void> MergeRun::ImportDumps() {
  if (fr_.inputs.empty()) return rs::Ok();
  FrImportResult imported;
  {
    ASSIGN_OR_RETURN(rs::Transaction tx, rs::Transaction::Begin(out_));
    ASSIGN_OR_RETURN(imported, ImportFlightRecorder(out_, fr_.dumps, result_.alignment, log_));
    RETURN_IF_ERROR(tx.Commit());
  }
  for (const FrInput& d : fr_.dumps) {
    const auto n = static_cast<int64_t>(d.dump.entries.size());
    counts_[d.input_id].push_back(TableCount{"fr_entries", n, n, 0, ""});
  }
  for (std::string& w : imported.warnings) result_.warnings.push_back(std::move(w));
  // merged_ points into inputs_: room was made for the dumps in Plan, so no pointer moves.
  for (Input& in : fr_.inputs) inputs_.push_back(std::move(in));
  if (merged_.empty()) {  // the recording's span is the dumps'
    fr_span_ = std::make_pair(imported.first_ns, imported.last_ns);
  }
  timer_.End("flight recorder");
  return rs::Ok();
}

rs::Result<void> MergeRun::WriteMergeSummary() {
  PrintAllCounts(log_, inputs_, counts_);
  if (counts_.empty()) return rs::Error("nothing merged: every valid input failed to copy");
  CountDuplicates(log_, inputs_, counts_);

  for (const Input& in : inputs_) {
    result_.inputs.push_back(InputSummary{in.input_id, in.file, in.node, in.status, in.reason});
    if (in.status == "merged") ++result_.merged;
  }
  // Only nodes that were actually copied keep an alignment row.
  std::vector<NodeAlignment> written;
  for (size_t i = 0; i < merged_.size(); ++i) {
    if (merged_[i]->status == "merged") written.push_back(result_.alignment[i]);
  }
  result_.alignment = written;
  {
    ASSIGN_OR_RETURN(rs::Transaction tx, rs::Transaction::Begin(out_));
    RETURN_IF_ERROR(WriteMergeTables(out_, inputs_, counts_, written, result_));
    if (fr_span_) RETURN_IF_ERROR(SetSpan(out_, fr_span_->first, fr_span_->second, result_));
    RETURN_IF_ERROR(tx.Commit());
  }
  timer_.End("merge tables");
  return rs::Ok();
}

rs::Result<MergeResult> MergeRun::WriteOut() {
  progress_.Show("building indexes...");
  RETURN_IF_ERROR(rs::CreateIndexes(out_));
  progress_.Done();
  ASSIGN_OR_RETURN(const CollectiveDurations durations, MeasureCollectiveDurations(out_));
  for (std::string& w : ClockBoundWarnings(result_.alignment, durations)) {
    result_.warnings.push_back(std::move(w));
  }
  out_ = rs::Db();  // every page is written at its transaction's commit: closed before the name
  timer_.End("indexes");
  if (bundle_target_) {
    ASSIGN_OR_RETURN(rs::OutputFile bundle, rs::OutputFile::Create(*bundle_target_));
    RETURN_IF_ERROR(rs::CompressToFd(out_file_.path(), bundle.fd(), bundle.shown(), 9));
    RETURN_IF_ERROR(bundle.Commit());
  }
  RETURN_IF_ERROR(out_file_.Commit());
  timer_.End("write out");
  result_.phases = timer_.Take();
  return std::move(result_);
}

rs::Result<MergeResult> MergeInto(const MergeOptions& opt, std::ostream& log,
                                  rs::OutputFile& out_file) {
  MergeRun run(opt, log, out_file);
  RETURN_IF_ERROR(run.Plan());
  RETURN_IF_ERROR(run.OpenOutput());
  RETURN_IF_ERROR(run.CopyInputs());
  RETURN_IF_ERROR(run.AddPartEventTables());
  RETURN_IF_ERROR(run.DeriveSplits());
  RETURN_IF_ERROR(run.ImportDumps());
  RETURN_IF_ERROR(run.WriteMergeSummary());
  return run.WriteOut();
}

}  // namespace

rs::Result<MergeResult> Merge(const MergeOptions& opt, std::ostream& log) {
  rs::OutputFile out_file;  // dropped on an error: nothing of the output remains
  auto r = MergeInto(opt, log, out_file);
  // SQLite's "database or disk is full" said as what it is, naming where the merge writes
  // (where the message does not say so already).
  if (r.ok() || !NoSpace(r.error()) ||
      r.error().message().find("no space left on device") != std::string::npos) {
    return r;
  }
  const std::string where = out_file.target().kind == rs::OutputTarget::Kind::kFile
                                ? opt.out_path
                                : "temporary files in " + out_file.dir();
  return rs::Error("no space left on device writing " + where + " (" + r.error().message() + ")",
                   rs::ErrorKind::kNoSpace);
}

}  // namespace rs::merge
