// Device arrival: on a GPU an NCCL collective call only enqueues the work; the device reaches
// the collective later, and that is where the ranks meet. rankscope's NCCL profiler plugin
// records it per rank in gpu_ops (host enqueue, device start and end, conversion bound, state).
// This joins those rows to the NCCL calls by (node, pid, comm_id_hash, seq) and sets every
// collective's arrivals: device starts where every call of it has one, else host entries, so
// that one collective is never compared on two clocks of different meaning.
#pragma once

#include "analyzer/collectives.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {

// Before grouping: attaches each collective's gpu_ops row to its call (the first by entry of
// that participant at that (comm, seq)); a row without a recorded call becomes a call of its
// own (host_seen false, entry = its enqueue). Nothing happens where the table is absent (a
// recording of an earlier recorder).
rs::Result<void> JoinDeviceOps(rs::Db& db, CollectiveData& data);
// Marks the groups of calls captured into CUDA graphs (those the replays name) as left out of
// lateness: capturing ran nothing and returned at once.
void MarkGraphCaptured(CollectiveData& data);

// After grouping: each collective's basis, arrivals, last arrival, completion; each
// participant's device conversion bound; data.device_collectives. Without `device` every
// collective is compared on host entries (blocking calls: an entry is an arrival there, free of
// the conversion bound).
void SetArrivals(CollectiveData& data, bool device = true);

// The device-side bound of a claim that participant `later` arrived after another one. The
// plugin's converted device times are never earlier than the truth and at most clock_error_ns
// later (libnccl-profiler-rankscope(7)), so a later converted arrival is truly later by at least
// the difference minus the later one's bound: the earlier one's bound does not count. 0 where
// its arrivals are host entries.
int64_t DeviceBound(const CollectiveData& data, int32_t later);

// After MarkEnqueues: where the recording has device arrivals, a collective without every
// rank's device start whose calls only enqueue is left out of the lateness comparison (an
// enqueue's entry is no arrival, and the others are compared on device). Returns how many.
int64_t ExcludeEnqueueEntries(CollectiveData& data);

// Arrival order from device waits, free of clocks: a rank's device duration in a collective
// (device end - device start) is read on its own device clock, so neither the conversion nor
// the alignment error enters it. Ranks that arrived early wait inside the collective for the
// late one: start_p - start_q = (d_q - d_p) - (end_q - end_p), and every rank ends a collective
// within about one transfer after the last arrival, which is the last arrival's own duration.
// So the late rank arrived at least d_q - 2 d_p later. This rests on how collectives end (a
// model, not a measured bound; the test bed's ends agree within a fraction of that).
// Where every rank's kernel timed its wait at an opening barrier (Collective::barrier_basis:
// NCCL 2.31's symmetric kernels), that wait replaces the duration: measured, no allowance.
struct WaitOrdering {
  bool determined = false;          // the median lower bound below is positive
  int64_t collectives = 0;          // compared: on device, ended everywhere
  int64_t barrier_collectives = 0;  // ... of them on measured barrier waits
  int64_t own_wait_ns = 0;          // the late rank's median device duration
  int64_t others_wait_ns = 0;       // median over collectives of the others' median duration
  int64_t late_at_least_ns = 0;     // median over collectives of others - own - allowance
  // Every compared collective on measured barrier waits: a measurement, no model.
  bool measured() const { return collectives > 0 && barrier_collectives == collectives; }
};

// `late` is the late rank (a node-level straggler's latest rank); the others are every other
// participant, or with `other_nodes` those on other nodes (its node-mates are late too).
WaitOrdering OrderByWaits(const CollectiveData& data, int32_t late, bool other_nodes);

}  // namespace rs::analyzer
