// The format-neutral trace the exporter produces: tracks, then a time-ordered stream of
// slice begin/end, instant and counter events on them. The Perfetto protobuf writer and
// the Chrome JSON writer both consume it, so both formats show the same thing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rscore/result.h"

namespace rs::exporter {

enum class TrackKind {
  kNode,     // grouping track of one node
  kProcess,  // a traced process (a rank)
  kThread,   // a thread of a traced process
  kSlices,   // a child track holding slices or instants (network, disk, sched, GPU, lanes)
  kCounter,  // a counter track
};

enum class CounterUnit { kNone, kTimeNs, kCount };

struct Track {
  uint32_t index = 0;        // position in TrackModel::tracks()
  uint64_t uuid = 0;         // Perfetto track uuid (never 0)
  uint64_t parent_uuid = 0;  // 0: top level
  TrackKind kind = TrackKind::kSlices;
  std::string name;
  // Synthetic ids, unique across all nodes. Process / thread tracks carry their own;
  // every other track carries the ids it is shown under in Chrome JSON.
  int32_t pid = 0;
  int64_t tid = 0;  // 0 for process, node and counter tracks
  CounterUnit unit = CounterUnit::kNone;
  // Where the track sorts among its siblings (Perfetto: sibling_order_rank, honoured under a
  // parent with explicit_child_order and at the top level) and in Chrome JSON
  // (process_sort_index of node and process tracks, thread_sort_index of the others).
  int32_t sort_index = 0;
  bool explicit_child_order = false;  // children shown by sort_index, not by name
  // Siblings with one merge key are shown as one track (Perfetto: sibling_merge_key, the UI
  // lays their slices out in rows of it): the lanes of one block device. '' for none.
  std::string merge_key;
};

struct Annotation {
  enum class Kind { kInt, kUint, kString, kBool };
  std::string_view name;  // always a string literal
  Kind kind = Kind::kInt;
  int64_t i = 0;
  uint64_t u = 0;
  std::string s;
  bool b = false;
};

enum class EventType { kSliceBegin, kSliceEnd, kInstant, kCounter };

// Where an event sits in a flow.
enum class FlowRole { kNone, kStart, kStep, kEnd };

// What a flow links: the slices of one collective across its ranks, or a host call (or the
// instant of an enqueue without one) to the device slice of the operation it enqueued.
enum class FlowKind { kCollective, kEnqueue };

struct FlowLink {
  FlowKind kind = FlowKind::kCollective;
  FlowRole role = FlowRole::kNone;
  uint64_t id = 0;  // never 0
};

struct TraceEvent {
  EventType type = EventType::kInstant;
  int64_t ts = 0;         // aligned wall-clock ns
  uint32_t track = 0;     // Track::index
  std::string_view name;  // begin / instant; points into stable storage
  std::string_view category;
  int64_t end_ts = 0;  // begin only: when the matching end comes
  int64_t counter_value = 0;
  std::vector<FlowLink> flows;  // begin / instant: the flows through this event, in order
  std::vector<Annotation> args;
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  // Called once, before any track or event, with the trace's first and last timestamp.
  virtual Result<void> Begin(int64_t first_ts, int64_t last_ts) = 0;
  // Called before the first event on the track (and after its parent was declared).
  virtual Result<void> DeclareTrack(const Track& track) = 0;
  // Events arrive in non-decreasing timestamp order.
  virtual Result<void> Emit(const TraceEvent& event) = 0;
  virtual Result<void> Finish() = 0;
};

}  // namespace rs::exporter
