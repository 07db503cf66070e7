// The track tree of an exported trace: node -> rank (process) -> thread and the rank's GPU
// track, plus per-node network / disk / process-event tracks and counters. Tracks are created when
// first used, so ids follow the (deterministic) event order. Pids and tids are synthesized: every
// node has its own pid namespace, so real ids collide across nodes; the real ones are
// kept in the track names ("node3 / rank 5 (pid 1234)").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "event_reader.h"
#include "trace_sink.h"

namespace rs::exporter {

inline constexpr std::string_view kDeviceTrackName = "GPU (NCCL kernels)";

class TrackModel {
 public:
  explicit TrackModel(ProcessMap processes) : processes_(std::move(processes)) {}

  const std::vector<Track>& tracks() const { return tracks_; }
  const Track& track(uint32_t index) const { return tracks_[index]; }

  uint32_t Node(std::string_view node);
  uint32_t Process(std::string_view node, int64_t pid);
  uint32_t Thread(std::string_view node, int64_t pid, int64_t tid);
  // A slice/instant track under the node ("network", "disk", "process events").
  uint32_t NodeChild(std::string_view node, std::string_view what);
  // The scheduler track of one thread, under its process.
  uint32_t SchedTrack(std::string_view node, int64_t pid, int64_t tid);
  // The GPU track of a process (what its NCCL operations ran on the device), under it beside
  // its threads: kDeviceTrackName.
  uint32_t DeviceTrack(std::string_view node, int64_t pid);
  // A counter under the node or process track `owner`.
  uint32_t Counter(uint32_t owner, std::string_view what, CounterUnit unit);

  // The track of `logical` a slice [begin, end] goes on: the logical track itself when the
  // slice nests inside or follows what is open there, else an overlap lane next to it, so
  // every track holds properly nested slices.
  uint32_t Lane(uint32_t logical, int64_t begin, int64_t end);

  // Tracks created since the last call, parents before children.
  std::vector<uint32_t> TakeNew();

  // Rank label of a process ("rank 5"), empty when unknown.
  std::string RankLabel(std::string_view node, int64_t pid) const;

 private:
  struct Lanes {
    std::vector<uint32_t> tracks;                 // lane 0 = the logical track
    std::vector<std::vector<int64_t>> open_ends;  // per lane: ends of open slices (a stack)
  };
  uint32_t Add(Track t);
  int64_t NextId() { return next_id_++; }

  ProcessMap processes_;
  std::vector<Track> tracks_;
  std::vector<uint32_t> new_;
  std::map<std::string, uint32_t, std::less<>> nodes_;
  std::map<std::tuple<uint32_t, int64_t>, uint32_t> process_;                 // (node, pid)
  std::map<std::tuple<uint32_t, int64_t, int64_t>, uint32_t> thread_;         // (node, pid, tid)
  std::map<std::tuple<uint32_t, int64_t, int64_t>, uint32_t> sched_;          // (node, pid, tid)
  std::map<std::tuple<uint32_t, std::string>, uint32_t, std::less<>> child_;  // (parent, name)
  std::vector<Lanes> lanes_;  // by logical track index
  uint64_t next_uuid_ = 1;
  int64_t next_id_ = 1;
};

}  // namespace rs::exporter
