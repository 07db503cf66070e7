// Warnings at the top of the report about what its verdicts compare across nodes: a node whose
// clock error bound (clock_alignment.error_bound_ns) is larger than the lateness a verdict
// compares for it. Lateness differences inside that bound cannot be ordered across nodes, so
// the verdict resting on one says so and drops to low confidence.
#pragma once

#include <cstdint>
#include <optional>

#include "analyzer/report_model.h"

namespace rs::analyzer {

// The lateness across nodes `s` rests on: a lateness straggler's margin over the other nodes'
// ranks (unless its node-mates, on its own host clock, decided it), a resource verdict's median
// lateness above the other nodes' (lateness_excess_ns) on host entries. Empty for what rests on
// no such comparison: hang culprits, clock-free device waits (`waits_view`: the resource
// findings were placed on them), retransmits and durations.
std::optional<int64_t> ComparedLateness(const Straggler& s, bool waits_view);

// For every compared node (r.per_node) whose bound is larger than a verdict's compared lateness:
// one warning naming the verdicts that depend on it; each such verdict above low confidence is
// lowered to low, says why, and carries the bound. Call once the verdicts are placed.
void AddClockBoundWarnings(Report& r);

// The basis of the lateness beside a resource finding (block I/O, run-queue share,
// retransmits), which rests on that evidence and on its node being later than the others:
// 'device_waits' where the recording timed the devices (each read on one device clock, no
// clock bound enters it), else the recording's arrivals (r.timing.arrival_basis). Call after
// AddClockBoundWarnings, which tells resource findings by their empty arrival_basis.
void NameResourceLatenessBasis(Report& r);

}  // namespace rs::analyzer
