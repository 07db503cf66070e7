#include "exporter/track_model.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <set>
#include <utility>

#include "rscore/cli.h"

namespace rs::exporter {
namespace {

// Sort indexes of a node's own tracks, after its processes: network, process events and
// counters, then the block devices (kDiskStride apart: a device's lanes, merged into one track in
// the UI, from its rank on).
constexpr int32_t kNodeChildSort = 1 << 29;
constexpr int32_t kDiskSort = 1 << 30;
constexpr int32_t kDiskStride = 1 << 12;
// Top-level tracks of ranks no node recorded (dumps alone), after every node, by rank; and a
// process's Flight Recorder tracks after its threads, by group.
constexpr int32_t kFrRankSort = 1 << 30;
constexpr int32_t kFrGroupSort = 1 << 29;
constexpr int32_t kProcessCounterSort = 1 << 28;

int32_t Clamp(int64_t v) { return static_cast<int32_t>(std::clamp<int64_t>(v, 0, INT32_MAX)); }

struct NaturalOrder {
  bool operator()(const std::string& a, const std::string& b) const {
    return rs::cli::NaturalLess(a, b);
  }
};

}  // namespace

TrackModel::TrackModel(ProcessMap processes, const std::vector<std::string>& nodes,
                       BlockDeviceNames devices)
    : processes_(std::move(processes)), devices_(std::move(devices)) {
  std::set<std::string, NaturalOrder> all(nodes.begin(), nodes.end());
  std::map<std::string, std::vector<std::pair<std::optional<int64_t>, int64_t>>> ranked;
  for (const auto& [key, info] : processes_) {
    all.insert(key.first);
    ranked[key.first].emplace_back(info.rank, key.second);
  }
  std::map<std::string, std::set<std::string, NaturalOrder>> disks;
  for (const auto& [key, name] : devices_) {
    all.insert(key.first);
    disks[key.first].insert(name.empty() ? key.second : name);
  }
  size_t most = 0;
  for (const auto& [node, procs] : ranked) most = std::max(most, procs.size());
  // The node, its known processes, one slot shared by processes not in the process table.
  node_stride_ = Clamp(static_cast<int64_t>(most) + 2);
  int64_t i = 0;
  for (const std::string& node : all) node_sort_[node] = Clamp(i++ * node_stride_);
  for (auto& [node, procs] : ranked) {
    // Ranks in order, then processes without a rank by pid.
    std::sort(procs.begin(), procs.end(), [](const auto& a, const auto& b) {
      if (a.first.has_value() != b.first.has_value()) return a.first.has_value();
      if (a.first != b.first) return *a.first < *b.first;
      return a.second < b.second;
    });
    int64_t k = 0;
    for (const auto& [rank, pid] : procs) {
      process_sort_[{node, pid}] = Clamp(node_sort_[node] + 1 + k++);
    }
  }
  for (const auto& [node, names] : disks) {
    int64_t k = 0;
    for (const std::string& name : names) {
      disk_sort_[{node, name}] = Clamp(kDiskSort + k++ * kDiskStride);
    }
  }
}

int32_t TrackModel::NodeSortIndex(std::string_view node) {
  auto it = node_sort_.find(node);
  if (it != node_sort_.end()) return it->second;
  // Not known ahead: after every known node, in order of appearance.
  const int64_t index = static_cast<int64_t>(node_sort_.size()) + late_nodes_++;
  return Clamp(index * node_stride_);
}

int32_t TrackModel::ProcessSortIndex(std::string_view node, int64_t pid) {
  auto it = process_sort_.find({std::string(node), pid});
  if (it != process_sort_.end()) return it->second;
  return Clamp(static_cast<int64_t>(tracks_[Node(node)].sort_index) + node_stride_ - 1);
}

std::string TrackModel::DiskName(std::string_view node, std::string_view dev) const {
  auto it = devices_.find({std::string(node), std::string(dev)});
  return it == devices_.end() || it->second.empty() ? std::string(dev) : it->second;
}

uint32_t TrackModel::Add(Track t) {
  t.index = static_cast<uint32_t>(tracks_.size());
  t.uuid = next_uuid_++;
  tracks_.push_back(std::move(t));
  new_.push_back(tracks_.back().index);
  return tracks_.back().index;
}

std::vector<uint32_t> TrackModel::TakeNew() {
  std::vector<uint32_t> out;
  out.swap(new_);
  return out;
}

uint32_t TrackModel::Node(std::string_view node) {
  auto it = nodes_.find(node);
  if (it != nodes_.end()) return it->second;
  Track t;
  t.kind = TrackKind::kNode;
  t.name = std::string(node);
  t.pid = static_cast<int32_t>(NextId());
  t.sort_index = NodeSortIndex(node);
  t.explicit_child_order = true;
  uint32_t idx = Add(std::move(t));
  nodes_.emplace(std::string(node), idx);
  return idx;
}

std::string TrackModel::RankLabel(std::string_view node, int64_t pid) const {
  auto it = processes_.find({std::string(node), pid});
  if (it == processes_.end() || !it->second.rank) return "";
  return "rank " + std::to_string(*it->second.rank);
}

uint32_t TrackModel::Process(std::string_view node, int64_t pid) {
  uint32_t n = Node(node);
  auto key = std::make_tuple(n, pid);
  auto it = process_.find(key);
  if (it != process_.end()) return it->second;
  std::string label = RankLabel(node, pid);
  if (label.empty()) {
    auto p = processes_.find({std::string(node), pid});
    label = p != processes_.end() && !p->second.comm.empty() ? p->second.comm : "process";
  }
  Track t;
  t.kind = TrackKind::kProcess;
  t.parent_uuid = tracks_[n].uuid;
  t.name = std::string(node) + " / " + label + " (pid " + std::to_string(pid) + ")";
  t.pid = static_cast<int32_t>(NextId());
  t.sort_index = ProcessSortIndex(node, pid);
  t.explicit_child_order = true;  // the GPU track first, then each thread with its scheduler
  uint32_t idx = Add(std::move(t));
  process_.emplace(key, idx);
  return idx;
}

uint32_t TrackModel::Thread(std::string_view node, int64_t pid, int64_t tid) {
  uint32_t p = Process(node, pid);
  auto key = std::make_tuple(nodes_.find(node)->second, pid, tid);
  auto it = thread_.find(key);
  if (it != thread_.end()) return it->second;
  Track t;
  t.kind = TrackKind::kThread;
  t.parent_uuid = tracks_[p].uuid;
  t.pid = tracks_[p].pid;
  // The main thread keeps tid == pid, as on Linux.
  t.tid = tid == pid ? tracks_[p].pid : NextId();
  t.name = ThreadName(node, pid, tid);
  t.sort_index = ThreadSortIndex(node, pid, tid);
  uint32_t idx = Add(std::move(t));
  thread_.emplace(key, idx);
  return idx;
}

std::string TrackModel::ThreadName(std::string_view node, int64_t pid, int64_t tid) const {
  auto info = processes_.find({std::string(node), pid});
  const std::string comm = info != processes_.end() ? info->second.comm : "";
  return (comm.empty() ? "" : comm + " ") + "tid " + std::to_string(tid);
}

int32_t TrackModel::ThreadSortIndex(std::string_view node, int64_t pid, int64_t tid) {
  // Threads in order of first appearance, two apart: a thread's scheduler track sorts right
  // after it, whichever of the two came first; index 0 is the GPU track's.
  auto key = std::make_tuple(nodes_.find(node)->second, pid, tid);
  auto it = thread_order_.find(key);
  if (it == thread_order_.end()) {
    it =
        thread_order_.emplace(key, Clamp(2 + 2 * static_cast<int64_t>(thread_order_.size()))).first;
  }
  return it->second;
}

uint32_t TrackModel::NodeChild(std::string_view node, std::string_view what) {
  uint32_t n = Node(node);
  auto it = child_.find(std::make_tuple(n, std::string(what)));
  if (it != child_.end()) return it->second;
  Track t;
  t.kind = TrackKind::kSlices;
  t.parent_uuid = tracks_[n].uuid;
  t.name = std::string(node) + " / " + std::string(what);
  t.pid = tracks_[n].pid;
  t.tid = NextId();
  t.sort_index = Clamp(kNodeChildSort + t.tid);
  uint32_t idx = Add(std::move(t));
  child_.emplace(std::make_tuple(n, std::string(what)), idx);
  return idx;
}

uint32_t TrackModel::SchedTrack(std::string_view node, int64_t pid, int64_t tid) {
  uint32_t p = Process(node, pid);
  auto key = std::make_tuple(nodes_.find(node)->second, pid, tid);
  auto it = sched_.find(key);
  if (it != sched_.end()) return it->second;
  Track t;
  t.kind = TrackKind::kSlices;
  t.parent_uuid = tracks_[p].uuid;
  t.name = ThreadName(node, pid, tid) + " / scheduler";
  t.pid = tracks_[p].pid;
  t.tid = NextId();
  t.sort_index = ThreadSortIndex(node, pid, tid) + 1;
  uint32_t idx = Add(std::move(t));
  sched_.emplace(key, idx);
  return idx;
}

uint32_t TrackModel::DeviceTrack(std::string_view node, int64_t pid) {
  uint32_t p = Process(node, pid);
  auto key = std::make_tuple(p, std::string("device:nccl"));
  auto it = child_.find(key);
  if (it != child_.end()) return it->second;
  // Named with its node and rank (a GPU track is what a reader looks for first), first
  // under its process.
  const std::string& process = tracks_[p].name;
  Track t;
  t.kind = TrackKind::kSlices;
  t.parent_uuid = tracks_[p].uuid;
  t.name = process.substr(0, process.find(" (pid")) + " / " + std::string(kDeviceTrackName);
  t.pid = tracks_[p].pid;
  t.tid = NextId();
  t.sort_index = 0;
  uint32_t idx = Add(std::move(t));
  child_.emplace(key, idx);
  return idx;
}

uint32_t TrackModel::Counter(uint32_t owner, std::string_view what, CounterUnit unit) {
  auto key = std::make_tuple(owner, "counter:" + std::string(what));
  auto it = child_.find(key);
  if (it != child_.end()) return it->second;
  Track t;
  t.kind = TrackKind::kCounter;
  t.parent_uuid = tracks_[owner].uuid;
  const Track& o = tracks_[owner];
  t.name = (o.kind == TrackKind::kNode ? o.name : o.name.substr(0, o.name.find(" (pid"))) + " / " +
           std::string(what);
  t.pid = o.pid;
  t.unit = unit;
  // Under a node after its processes; under a process after its threads.
  t.sort_index =
      Clamp((o.kind == TrackKind::kNode ? kNodeChildSort : kProcessCounterSort) + NextId());
  uint32_t idx = Add(std::move(t));
  child_.emplace(key, idx);
  return idx;
}

uint32_t TrackModel::FlightRecorder(std::string_view node, int64_t pid, int64_t rank, int64_t pg,
                                    std::string_view label) {
  uint32_t parent = 0;
  if (!node.empty()) {
    parent = Process(node, pid);
  } else if (auto it = fr_ranks_.find(rank); it != fr_ranks_.end()) {
    parent = it->second;
  } else {
    Track t;
    t.kind = TrackKind::kProcess;
    t.name = "rank " + std::to_string(rank) + " (Flight Recorder dump)";
    t.pid = static_cast<int32_t>(NextId());
    t.sort_index = Clamp(int64_t{kFrRankSort} + rank);
    t.explicit_child_order = true;
    parent = Add(std::move(t));
    fr_ranks_.emplace(rank, parent);
  }
  auto key = std::make_tuple(parent, "fr:" + std::to_string(pg));
  auto it = child_.find(key);
  if (it != child_.end()) return it->second;
  Track t;
  t.kind = TrackKind::kSlices;
  t.parent_uuid = tracks_[parent].uuid;
  t.name = "Flight Recorder " + std::string(label);
  t.pid = tracks_[parent].pid;
  t.tid = NextId();
  t.sort_index = Clamp(int64_t{kFrGroupSort} + pg);
  uint32_t idx = Add(std::move(t));
  child_.emplace(key, idx);
  return idx;
}

uint32_t TrackModel::Verdict() {
  if (verdict_) return *verdict_;
  Track top;
  top.kind = TrackKind::kProcess;
  top.name = "rankscope verdict";
  top.pid = static_cast<int32_t>(NextId());
  top.sort_index = -1;  // before node0 (0)
  const uint32_t parent = Add(std::move(top));
  Track t;
  t.kind = TrackKind::kSlices;
  t.parent_uuid = tracks_[parent].uuid;
  t.name = "verdict and its evidence (rankscope-analyze report)";
  t.pid = tracks_[parent].pid;
  t.tid = NextId();
  verdict_ = Add(std::move(t));
  return *verdict_;
}

uint32_t TrackModel::Lane(uint32_t logical, int64_t begin, int64_t end) {
  if (lanes_.size() <= logical) lanes_.resize(logical + 1);
  Lanes& l = lanes_[logical];
  if (l.tracks.empty()) {
    l.tracks.push_back(logical);
    l.open_ends.emplace_back();
  }
  for (size_t k = 0; k < l.tracks.size(); ++k) {
    std::vector<int64_t>& open = l.open_ends[k];
    while (!open.empty() && open.back() <= begin) open.pop_back();
    // Nested: ends no later than the innermost open slice. An equal begin with an open
    // zero-length slice was popped above.
    if (open.empty() || end <= open.back()) {
      open.push_back(end);
      return l.tracks[k];
    }
  }
  // No lane fits: a new overlap lane beside the logical track.
  const Track& base = tracks_[logical];
  Track t;
  t.kind = TrackKind::kSlices;
  // Beside the logical track: under the same parent (a thread's lanes under its process,
  // since a thread has exactly one thread track).
  t.parent_uuid = base.parent_uuid;
  t.name = base.name + " (overlap " + std::to_string(l.tracks.size()) + ")";
  t.pid = base.pid;
  t.tid = NextId();
  t.sort_index = base.sort_index;  // next to it
  uint32_t idx = Add(std::move(t));
  l.tracks.push_back(idx);
  l.open_ends.push_back({end});
  return idx;
}

int64_t TrackModel::NestedEnd(uint32_t logical, int64_t begin, int64_t end) {
  if (lanes_.size() <= logical || lanes_[logical].open_ends.empty()) return end;
  std::vector<int64_t>& open = lanes_[logical].open_ends[0];
  while (!open.empty() && open.back() <= begin) open.pop_back();
  return open.empty() ? end : std::min(end, open.back());
}

uint32_t TrackModel::DiskLane(std::string_view node, std::string_view dev, int64_t begin,
                              int64_t end) {
  const uint32_t n = Node(node);
  auto it = disks_.find(std::make_tuple(n, std::string(dev)));
  if (it == disks_.end()) {
    const std::string name = DiskName(node, dev);
    Disk d;
    d.name = std::string(node) + " / disk " + name;
    d.merge_key = "disk " + std::string(node) + " " + std::string(dev);
    auto known = disk_sort_.find({std::string(node), name});
    if (known != disk_sort_.end()) {
      d.sort_index = known->second;
    } else {
      // Not named ahead: after the node's known devices, in order of appearance.
      int32_t known_here = 0;
      for (const auto& [key, index] : disk_sort_) known_here += key.first == node ? 1 : 0;
      const int64_t k = known_here + late_disks_[std::string(node)]++;
      d.sort_index = Clamp(kDiskSort + k * kDiskStride);
    }
    it = disks_.emplace(std::make_tuple(n, std::string(dev)), std::move(d)).first;
  }
  Disk& d = it->second;
  for (size_t k = 0; k < d.lanes.size(); ++k) {
    if (d.lane_ends[k] <= begin) {
      d.lane_ends[k] = std::max(end, begin);
      return d.lanes[k];
    }
  }
  const int64_t k = static_cast<int64_t>(d.lanes.size());
  Track t;
  t.kind = TrackKind::kSlices;
  t.parent_uuid = tracks_[n].uuid;
  t.name = d.name;
  t.merge_key = d.merge_key;
  t.pid = tracks_[n].pid;
  t.tid = NextId();
  t.sort_index = Clamp(d.sort_index + std::min<int64_t>(k, kDiskStride - 1));
  d.lanes.push_back(Add(std::move(t)));
  d.lane_ends.push_back(std::max(end, begin));
  return d.lanes.back();
}

}  // namespace rs::exporter
