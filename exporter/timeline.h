// Turns the ordered row stream into trace events: slices for NCCL / CUDA calls, scheduler
// waits and block I/O; instants for retransmits and process exec/exit; counters for
// run-queue latency and retransmits per second; flows linking one collective across its
// ranks. Slice ends and counter updates wait in a heap until their time comes, so the
// sink sees every event in timestamp order.
//
// gpu_ops rows (read at their host enqueue) become device slices on the rank's GPU track,
// which wait in the same heap until their device start: memory grows with the operations
// enqueued and not yet started at one time, not with the table. A host call of a process
// with gpu_ops starts a flow that its operation's device slice ends; an enqueue without a
// host call row, or of an operation that never started on the GPU, is an instant on the
// enqueuing thread. A collective's flow goes through the device slices of ranks with
// gpu_ops and the host calls of ranks without.
//
// Flight Recorder entries (fr_entries) go on their rank's track of their process group: a
// slice from time_created_ns to the discovered completion where PyTorch discovered one, an
// instant at time_created_ns where it did not (a scheduled or started entry, every gloo
// entry); their args say op, group, seq, sizes, state and what the dump says of timing.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <queue>
#include <string>
#include <unordered_set>
#include <vector>

#include "exporter/event_reader.h"
#include "exporter/row_pipeline.h"
#include "exporter/trace_sink.h"
#include "exporter/track_model.h"
#include "exporter/verdict_marks.h"

namespace rs::exporter {

struct TimelineStats {
  std::array<int64_t, kTableCount> rows{};  // rows consumed per table
  int64_t slices = 0, instants = 0, counter_samples = 0, flow_events = 0, in_flight = 0;
  int64_t device_slices = 0;               // of slices: on GPU tracks
  int64_t fr_slices = 0, fr_instants = 0;  // of slices and instants: Flight Recorder entries
  int64_t sched_cut = 0;  // scheduler spans cut short to nest on their thread's track
  int64_t marks = 0;      // of slices and instants: the report's (--report)
  int64_t events() const { return 2 * slices + instants + counter_samples; }
};

class Timeline {
 public:
  Timeline(TrackModel& tracks, TraceSink& sink, const InputSummary& summary)
      : tracks_(tracks), sink_(sink), summary_(summary) {}

  // Consumes every row of `rows`, then flushes what is pending.
  Result<void> Run(RowPipeline& rows);
  // The report's marks (verdict_marks.h), emitted in time order among the rows; those outside
  // the exported span are left out, slices are cut to it. Before Run.
  void AddMarks(std::vector<VerdictMark> marks);
  const TimelineStats& stats() const { return stats_; }

 private:
  struct Pending {
    int64_t ts;
    int kind;       // 0: slice end, 1: counter decay, 2: device slice begin, 3: a verdict mark
    int64_t order;  // slice ends: later begins end first; counters, device: creation order
    uint32_t track;
    bool operator>(const Pending& o) const {
      if (ts != o.ts) return ts > o.ts;
      if (kind != o.kind) return kind > o.kind;
      return order > o.order;
    }
  };
  // A device slice waiting for its start.
  struct DeviceOp {
    std::string node;
    int64_t pid = 0;
    std::string name;
    int64_t start = 0, end = 0;
    bool open = false;          // never completed: runs to the end of the trace
    uint64_t enqueue_flow = 0;  // ends here; 0: none
    bool linked = false;        // a collective linked across ranks by `key`
    std::pair<uint64_t, int64_t> key;
    std::vector<Annotation> args;
  };
  struct RateWindow {
    std::deque<std::pair<int64_t, int64_t>> hits;  // (ts, segments)
    int64_t sum = 0;
    int64_t last_emitted = -1;
  };

  Result<void> OnRow(const Row& row);
  Result<void> Declare();
  Result<void> FlushUntil(int64_t ts);
  Result<void> Slice(uint32_t logical, int64_t ts, int64_t end);
  Result<void> SliceOn(uint32_t track, int64_t ts, int64_t end);
  Result<void> Instant(uint32_t track, int64_t ts);
  Result<void> CounterSample(uint32_t track, int64_t ts, int64_t value);
  Result<void> Nccl(const Row& row);
  Result<void> Cuda(const Row& row);
  Result<void> Tcp(const Row& row);
  Result<void> Sched(const Row& row);
  Result<void> Block(const Row& row);
  Result<void> Process(const Row& row);
  Result<void> Gpu(const Row& row);
  Result<void> Fr(const Row& row);
  Result<void> EmitDevice(DeviceOp op);
  Result<void> EmitMark(const VerdictMark& m);
  void GpuArgs(const Row& row);
  void CollectiveFlow(std::pair<uint64_t, int64_t> key);
  Result<void> UpdateRate(uint32_t counter, int64_t now);
  void Reset(std::string_view category);
  void ArgInt(std::string_view name, int64_t v);
  void ArgOptInt(std::string_view name, const Row& row, int col);
  void ArgString(std::string_view name, std::string v);
  void ArgBool(std::string_view name, bool v);

  TrackModel& tracks_;
  TraceSink& sink_;
  const InputSummary& summary_;
  TimelineStats stats_;
  TraceEvent ev_;     // the event being built (reused)
  std::string name_;  // storage for ev_.name
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> pending_;
  int64_t begin_order_ = 0;
  std::map<std::pair<uint64_t, int64_t>, int> flow_seen_;
  std::map<uint32_t, int> runq_active_;         // counter track -> open waits
  std::map<uint32_t, RateWindow> rate_;         // counter track -> retransmit window
  std::map<int64_t, DeviceOp> device_pending_;  // by Pending::order
  int64_t device_order_ = 0;
  std::vector<VerdictMark> marks_;  // by Pending::order
  // Host calls of gpu_ops processes whose operation's row has not come yet, by flow id. A call
  // whose row never comes (lost by the plugin, or enqueued after --to) stays to the end.
  std::unordered_set<uint64_t> host_calls_;
};

}  // namespace rs::exporter
