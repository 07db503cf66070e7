// `rankscope-analyze diff BASELINE OTHER`: a good run against a bad one. Both recordings go
// through the report's own analysis (report.h); the diff adds no judgement of its own, it
// lines the two up: the verdicts and findings that appeared, went or stayed, each rank's
// lateness and duration (ranks matched by their global rank: host names may differ between
// runs), and each kind of collective's time (kinds matched by operation, element count, data
// type and the ranks taking part, since communicator ids are new in every run).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/collectives.h"
#include "analyzer/report_model.h"

namespace rs::analyzer {

// One recording as the diff shows it.
struct DiffSide {
  std::string input;
  std::string verdict;       // the report's first line
  std::string verdict_kind;  // as Report::verdict_kind
  std::string arrival_basis;
  int64_t ranks = 0;
  int64_t collectives = 0;     // matched
  int64_t span_ns = 0;         // first arrival to last completion of the compared collectives
  int64_t clock_bound_ns = 0;  // the largest node clock bound (0: one node, or the reference)
  std::string hang;            // the hang's summary; '' without one
  // Compared collectives per second of their span; 0 where there is no span.
  double Rate() const { return span_ns > 0 ? collectives * 1e9 / span_ns : 0; }
};

// A rank in both recordings (ArrivalStats of each report).
struct RankDiff {
  int64_t rank = 0;
  std::string node_a, node_b;
  int64_t collectives_a = 0, collectives_b = 0;
  int64_t last_a = 0, last_b = 0;            // collectives it arrived last in
  int64_t lateness_a = 0, lateness_b = 0;    // median lateness
  int64_t duration_a = -1, duration_b = -1;  // median collective duration; -1: none finished
  // The two nodes' clock bounds added: a lateness change below this is inside what the clocks
  // can tell apart (0 where both arrivals rest on one host clock or device waits).
  int64_t bound_ns = 0;
  bool named_a = false, named_b = false;  // a verdict of that recording names the rank
  int64_t Change() const { return lateness_b - lateness_a; }
};

// One kind of collective (operation, count, data type, ranks): its compared collectives in each.
struct KindDiff {
  std::string op;
  std::optional<int64_t> count;
  std::string datatype;
  std::string members;  // "ranks 0-7", or "8 ranks" where some rank is unknown
  int64_t n_a = 0, n_b = 0;
  // Medians over completed ones (-1: none): first arrival to completion (what the job waited),
  // and last arrival to completion (the collective's own time once all were in).
  int64_t span_a = -1, span_b = -1;
  int64_t after_last_a = -1, after_last_b = -1;
  // (span_b - span_a) x n_b where both have a span: the time it added in OTHER.
  int64_t Added() const { return span_a >= 0 && span_b >= 0 ? (span_b - span_a) * n_b : 0; }
};

// A verdict's finding in one or both recordings, matched by the ranks it names (else its node).
struct FindingDiff {
  // 'verdict' (Report::stragglers) | 'observation' (Report::observations: explains no
  // measured lateness); matched only within its kind.
  std::string kind;
  std::string change;            // 'added' (only in OTHER) | 'removed' (only in BASELINE) | 'kept'
  std::string who;               // "node1 rank 2" as the report names it (OTHER's where in both)
  std::string cause_a, cause_b;  // '' where absent
  std::string confidence_a, confidence_b;
  std::string summary;  // OTHER's summary, else BASELINE's
};

struct Diff {
  DiffSide a, b;
  // Verdicts added, kept, removed; then observations likewise.
  std::vector<FindingDiff> findings;
  std::vector<RankDiff> ranks;                          // the largest rise in median lateness first
  std::vector<std::string> ranks_only_a, ranks_only_b;  // labels
  std::vector<KindDiff> kinds;                          // the most time added first
  // What may make the comparison wrong (different shapes, different timing bases ...).
  std::vector<std::string> warnings;
  std::string headline;  // the first line of every format
};

Diff BuildDiff(const Report& a, const CollectiveData& ca, const Report& b,
               const CollectiveData& cb);

// Rendering (diff_render.cc): text with at most `rows` ranks and kinds (0: all); JSON has all.
std::string RenderDiffText(const Diff& d, size_t rows);
std::string RenderDiffJson(const Diff& d);

}  // namespace rs::analyzer
