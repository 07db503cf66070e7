// The track tree of an exported trace: node -> rank (process) -> thread and the rank's GPU
// track, plus per-node network / disk / process-event tracks and counters. Tracks are created when
// first used, so ids follow the (deterministic) event order. Pids and tids are synthesized: every
// node has its own pid namespace, so real ids collide across nodes; the real ones are
// kept in the track names ("node3 / rank 5 (pid 1234)").
//
// The order shown is not the order of creation: nodes sort naturally (node2 before node10), a
// node's ranks by rank (processes without one after them, by pid), then its network and
// process-event tracks, then one track per block device (by device name, naturally) holding
// the device's lanes "lane 0", "lane 1", ... in order.
//
// Flight Recorder entries go on one track per (rank, process group): under the rank's process
// where a node recorded it, else under a top-level track of the rank ("rank 3 (Flight Recorder
// dump)"), after every node, by rank.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "exporter/event_reader.h"
#include "exporter/trace_sink.h"

namespace rs::exporter {

inline constexpr std::string_view kDeviceTrackName = "GPU (NCCL kernels)";

// Name of each block device by (node, dev "MAJ:MIN"), as the recorder resolved it on the node;
// a device without an entry (or with an empty name) is shown by its MAJ:MIN.
using BlockDeviceNames = std::map<std::pair<std::string, std::string>, std::string>;

class TrackModel {
 public:
  // `nodes` and `devices` name what the stream will bring, so that tracks sort in their final
  // order whenever they are created; a node or device not named there sorts after the others.
  explicit TrackModel(ProcessMap processes, const std::vector<std::string>& nodes = {},
                      BlockDeviceNames devices = {});

  const std::vector<Track>& tracks() const { return tracks_; }
  const Track& track(uint32_t index) const { return tracks_[index]; }

  uint32_t Node(std::string_view node);
  uint32_t Process(std::string_view node, int64_t pid);
  uint32_t Thread(std::string_view node, int64_t pid, int64_t tid);
  // A slice/instant track under the node ("network", "disk", "process events").
  uint32_t NodeChild(std::string_view node, std::string_view what);
  // The scheduler track of one thread, under its process.
  uint32_t SchedTrack(std::string_view node, int64_t pid, int64_t tid);
  // The GPU track of a process (what its NCCL operations ran on the device), first under it
  // beside its threads: "node3 / rank 5 / " + kDeviceTrackName.
  uint32_t DeviceTrack(std::string_view node, int64_t pid);
  // A counter under the node or process track `owner`.
  uint32_t Counter(uint32_t owner, std::string_view what, CounterUnit unit);
  // The Flight Recorder track of process group `pg` (process_groups.id, shown as `label`) of
  // global rank `rank`: under the process (node, pid) when `node` is not empty, else under the
  // rank's own top-level track.
  uint32_t FlightRecorder(std::string_view node, int64_t pid, int64_t rank, int64_t pg,
                          std::string_view label);
  // The report's verdict (rankscope-export --report): a top-level track before every node,
  // holding one slice track.
  uint32_t Verdict();

  // The track of `logical` a slice [begin, end] goes on: the logical track itself when the
  // slice nests inside or follows what is open there, else an overlap lane next to it, so
  // every track holds properly nested slices.
  uint32_t Lane(uint32_t logical, int64_t begin, int64_t end);
  // The latest end a slice [begin, end] can have to nest on `logical` itself: `end`, or the
  // end of the innermost slice open there at `begin` when that is earlier.
  int64_t NestedEnd(uint32_t logical, int64_t begin, int64_t end);

  // The lane of a block device a request [begin, end] goes on: the lowest-numbered lane whose
  // last request ended by `begin` (requests come in start order, so no device has more lanes
  // than requests in flight at once). The lanes are tracks under the node, all named for the
  // device and with one merge key, so the UI shows the device as one track whose rows are its
  // lanes (a loop device with 24 requests in flight: one track, not 24).
  uint32_t DiskLane(std::string_view node, std::string_view dev, int64_t begin, int64_t end);

  // Tracks created since the last call, parents before children.
  std::vector<uint32_t> TakeNew();

  // Rank label of a process ("rank 5"), empty when unknown.
  std::string RankLabel(std::string_view node, int64_t pid) const;

 private:
  struct Lanes {
    std::vector<uint32_t> tracks;                 // lane 0 = the logical track
    std::vector<std::vector<int64_t>> open_ends;  // per lane: ends of open slices (a stack)
  };
  struct Disk {
    std::string name;  // "node0 / disk sda"
    std::string merge_key;
    int32_t sort_index = 0;
    std::vector<uint32_t> lanes;
    std::vector<int64_t> lane_ends;  // per lane: end of its last request
  };
  uint32_t Add(Track t);
  int64_t NextId() { return next_id_++; }
  int32_t NodeSortIndex(std::string_view node);
  int32_t ProcessSortIndex(std::string_view node, int64_t pid);
  int32_t ThreadSortIndex(std::string_view node, int64_t pid, int64_t tid);
  std::string ThreadName(std::string_view node, int64_t pid, int64_t tid) const;
  std::string DiskName(std::string_view node, std::string_view dev) const;

  ProcessMap processes_;
  BlockDeviceNames devices_;
  // Sort indexes: nodes kNodeStride apart, a node's processes right after it.
  std::map<std::string, int32_t, std::less<>> node_sort_;
  std::map<std::pair<std::string, int64_t>, int32_t> process_sort_;
  std::map<std::pair<std::string, std::string>, int32_t> disk_sort_;  // (node, device name)
  int32_t node_stride_ = 2;
  int32_t late_nodes_ = 0;
  std::map<std::string, int32_t, std::less<>> late_disks_;  // per node: disks not known ahead
  std::map<std::tuple<uint32_t, std::string>, Disk, std::less<>> disks_;  // (node, dev)
  std::vector<Track> tracks_;
  std::vector<uint32_t> new_;
  std::map<std::string, uint32_t, std::less<>> nodes_;
  std::map<std::tuple<uint32_t, int64_t>, uint32_t> process_;                 // (node, pid)
  std::map<std::tuple<uint32_t, int64_t, int64_t>, uint32_t> thread_;         // (node, pid, tid)
  std::map<std::tuple<uint32_t, int64_t, int64_t>, uint32_t> sched_;          // (node, pid, tid)
  std::map<std::tuple<uint32_t, int64_t, int64_t>, int32_t> thread_order_;    // (node, pid, tid)
  std::map<std::tuple<uint32_t, std::string>, uint32_t, std::less<>> child_;  // (parent, name)
  std::map<int64_t, uint32_t> fr_ranks_;  // rank -> its top-level Flight Recorder track
  std::optional<uint32_t> verdict_;
  std::vector<Lanes> lanes_;  // by logical track index
  uint64_t next_uuid_ = 1;
  int64_t next_id_ = 1;
};

}  // namespace rs::exporter
