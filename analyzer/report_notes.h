// The report's notes and warnings about its inputs and evidence: sources that were off or
// dropped events, inputs the merge skipped, what the lateness rests on (device arrival, host
// entries of enqueueing calls), clocks aligned by wall clock only and other jobs' bundles, and
// how retransmits were counted. The verdicts' own clock-bound warnings: report_warnings.h.
#pragma once

#include <string>
#include <vector>

#include "analyzer/call_semantics.h"
#include "analyzer/collectives.h"
#include "analyzer/report_model.h"
#include "analyzer/side_events.h"

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {

// Sources of the recording that were off or dropped events (table sources).
rs::Result<void> AddSourceNotes(rs::Db& db, std::vector<std::string>& notes);
// Profiler API v7's user tags on GPU operations: how many, how many values, their range.
rs::Result<void> AddUserTagNote(rs::Db& db, std::vector<std::string>& notes);
// CUDA graphs: the replayed collectives compared, or why none were.
void AddGraphReplayNote(const CollectiveData& data, std::vector<std::string>& notes);

// NCCL calls of communicators the recorder could not identify (r.unidentified_*), and what
// that leaves the analyses blind to. Call before the inventory's notes.
// `by_nccl_names`: the plugin's device operations of such communicators, compared by NCCL's own
// names (CollectiveData::device_ops_by_nccl_names).
rs::Result<void> CountUnidentifiedCalls(rs::Db& db, int64_t by_nccl_names, Report& r);
// After the hang analysis: a "no hang" covers only the identified communicators; with none
// identified it is undetermined.
void QualifyHangByUnidentified(Report& r);

// Inputs rankscope-merge skipped (table merge_inputs): their nodes are missing from every
// conclusion.
rs::Result<void> AddMergeNotes(rs::Db& db, std::vector<std::string>& notes);

// Nodes recorded as summaries (rankscope-analyze summarize): what their data lacks, and, for
// the nodes the verdict names, the raw bundles to merge beside them. Call once r.stragglers and
// r.hang are set.
rs::Result<void> AddSummaryNotes(rs::Db& db, bool merged, Report& r);

// What the lateness rests on (r.timing), and the data gaps the reader should know about.
void AddTimingNotes(const CollectiveData& data, const CallSemantics& sem, Report& r);

// Clock quality and foreign inputs, at the top of the report; lowers the verdicts that compare
// a wall-clock-aligned node's times with the others'. Call once r.clock and r.stragglers are
// set.
rs::Result<void> AddWarnings(rs::Db& db, bool merged, Report& r);

// When each verdict's node became later than the others (NodeExcess::onset, on the finding's
// own basis, else on the other one where the devices were timed): an 'onset' evidence line and
// its summary's "from +T on". Hang culprits and findings whose node shows no onset are left as
// they are. Call after NameResourceLatenessBasis.
void AddOnsets(Report& r);

// How the retransmits were counted (duplicates, failed attempts, unknown peers).
void AddRetransmitNotes(const SideEvents& side, Report& r);

}  // namespace rs::analyzer
