// The reading half of recorder/plugin/gpu_ring.h's protocol over a region's bytes, with every
// value the region holds treated as untrusted: the region lives in another process, whose
// user may write anything into it at any time (a process of any user can make a memfd named
// like the plugin's). No file, no mapping: GpuRingReader maps the region and hands its bytes
// here; the fuzz target (gpu_ring_fuzz.cc) hands bytes of its own.
//  - Attach checks the header once and keeps what fixes the layout (record and slot counts):
//    nothing read later from the region is used as a size or an index before it is bounded.
//  - Every Read first checks that the fields the plugin never changes after it made the
//    region (magic, version, sizes, counts, pid) are as they were, and that the counters the
//    plugin only ever increments (head, ops, drops) did not go back or leap past any count a
//    real process reaches. A region that fails is corrupt: it is read no more and the gpu
//    probe drops it (metadata gpu_regions_dropped_changed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "recorder/plugin/gpu_ring.h"
#include "rscore/result.h"

namespace rs::rec {

// Why a plugin region is not read: refused when found, or dropped while read. Counted per
// reason in the bundle (metadata gpu_regions_dropped_<name>), each region once.
enum class GpuRegionFault {
  kOwner,      // the file's owner is not the user of the process that holds it
  kNotSealed,  // not a memory file (memfd) sealed against shrinking
  kLayout,     // not this release's layout, or counts that do not fit the file
  kChanged,    // changed after it was opened in a way the plugin never changes it
};
inline constexpr GpuRegionFault kGpuRegionFaults[] = {
    GpuRegionFault::kOwner, GpuRegionFault::kNotSealed, GpuRegionFault::kLayout,
    GpuRegionFault::kChanged};
const char* GpuRegionFaultName(GpuRegionFault fault);  // 'owner', 'not_sealed', ...

// The largest region this recorder reads: the plugin of this release makes exactly this one
// (RS_GPU_SLOT_COUNT slots, RS_GPU_RING_RECORDS records; tests make smaller ones). Larger
// counts would only let a region make every read longer, so they are refused.
inline constexpr uint64_t kGpuRegionMaxBytes =
    RS_GPU_REGION_BYTES(RS_GPU_SLOT_COUNT, RS_GPU_RING_RECORDS);
// The most a counter of a region may reach (head, ops, drops): 2^48, 325 days at 10 million
// operations a second, where one process launches thousands. A larger value is forged; sums
// over regions of bounded counters cannot overflow.
inline constexpr uint64_t kGpuRegionMaxCount = uint64_t{1} << 48;

// The plugin's counters as of the last read that found the region intact.
struct GpuRingCounters {
  uint64_t ops = 0;             // operations launched
  uint64_t ops_unrecorded = 0;  // of them, launched while no recorder read
  uint64_t drops_slots_full = 0;
  uint64_t drops_late_event = 0;
  uint64_t ops_copy_engine = 0;  // v6+: collectives on the copy engines (counted, no record)
  uint64_t graph_calls = 0;             // calls captured into CUDA graphs
  uint64_t graph_calls_unrecorded = 0;  // of them, captured without the device events
  uint64_t graph_replay_ops = 0;        // operations of graph replays
  uint64_t proxy_times_off = 0;  // 1: the process made its region with proxy times off
  int32_t api_version = 0;       // the profiler API NCCL chose: 4-7; 0 before (anything else: 0)
};

class GpuRingView {
 public:
  GpuRingView() = default;  // attached to nothing: reads nothing
  // `base`: the region's first `size` bytes, 8-byte aligned, readable and writable for as
  // long as the view is used: they must not shrink (GpuRingReader maps a memfd sealed
  // against shrinking). Refuses a header of another layout, or counts that do not fit `size`
  // or exceed this release's (kGpuRegionMaxBytes); the message says which.
  static rs::Result<GpuRingView> Attach(void* base, size_t size);

  // Records written since the last call (the first: since Attach, or, where no reader had read
  // the region yet, since its creation: its startup window), in ring order; at most
  // ring_records() per call. Records overwritten before they were read are counted in
  // overruns(). A record still being written ends the read. Nothing once corrupt().
  std::vector<rs_gpu_op> Read();
  // A snapshot of the operations in flight (slots in use), oldest enqueue first; at most
  // slot_count(). Nothing when the header is no longer intact (the next Read says why).
  std::vector<rs_gpu_op> InFlight() const;
  // Tells the plugin a reader is there (CLOCK_MONOTONIC ns).
  void Heartbeat(int64_t now_ns);

  // Set by the Read that found the region changed: what changed, in words; empty while intact.
  const std::string& corruption() const { return corruption_; }
  bool corrupt() const { return !corruption_.empty(); }

  const GpuRingCounters& counters() const { return counters_; }  // at the last intact read
  uint64_t overruns() const { return overruns_; }  // records lost to the ring wrapping
  uint64_t read_records() const { return tail_; }  // next record index to read
  bool from_start() const { return from_start_; }  // read from the ring's first record
  uint32_t slot_count() const { return fixed_.slot_count; }
  uint32_t ring_records() const { return fixed_.ring_records; }
  int32_t creator_pid() const { return fixed_.pid; }  // the header's pid, as at Attach
  // The region's header as it is now: every field may be anything. For tests and the
  // plugin's benchmark; the recorder reads counters().
  const rs_gpu_ring_header& header() const { return *header_; }

 private:
  // The fields the plugin writes once, before the magic.
  struct Fixed {
    uint64_t magic = 0;
    uint32_t version = 0, header_bytes = 0, record_bytes = 0, slot_count = 0, ring_records = 0;
    int32_t pid = 0;
    bool operator==(const Fixed&) const = default;
  };
  static Fixed LoadFixed(const rs_gpu_ring_header& h);
  // Whether the header and counters are intact (then counters_ and head_ are updated); if
  // not, `*why` says what changed.
  bool CheckIntact(std::string* why);

  rs_gpu_ring_header* header_ = nullptr;
  const rs_gpu_op* slots_ = nullptr;
  const rs_gpu_op* ring_ = nullptr;
  Fixed fixed_;
  GpuRingCounters counters_;
  uint64_t head_ = 0;  // the head at the last intact read
  uint64_t tail_ = 0;
  uint64_t overruns_ = 0;
  bool from_start_ = false;
  std::string corruption_;
};

}  // namespace rs::rec
