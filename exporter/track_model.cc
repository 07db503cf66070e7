#include "track_model.h"

#include <utility>

namespace rs::exporter {

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
  uint32_t idx = Add(std::move(t));
  process_.emplace(key, idx);
  return idx;
}

uint32_t TrackModel::Thread(std::string_view node, int64_t pid, int64_t tid) {
  uint32_t p = Process(node, pid);
  auto key = std::make_tuple(nodes_.find(node)->second, pid, tid);
  auto it = thread_.find(key);
  if (it != thread_.end()) return it->second;
  auto info = processes_.find({std::string(node), pid});
  std::string comm = info != processes_.end() ? info->second.comm : "";
  Track t;
  t.kind = TrackKind::kThread;
  t.parent_uuid = tracks_[p].uuid;
  t.pid = tracks_[p].pid;
  // The main thread keeps tid == pid, as on Linux.
  t.tid = tid == pid ? tracks_[p].pid : NextId();
  t.name = (comm.empty() ? "" : comm + " ") + "tid " + std::to_string(tid);
  uint32_t idx = Add(std::move(t));
  thread_.emplace(key, idx);
  return idx;
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
  t.name = "scheduler tid " + std::to_string(tid);
  t.pid = tracks_[p].pid;
  t.tid = NextId();
  uint32_t idx = Add(std::move(t));
  sched_.emplace(key, idx);
  return idx;
}

uint32_t TrackModel::DeviceTrack(std::string_view node, int64_t pid) {
  uint32_t p = Process(node, pid);
  auto key = std::make_tuple(p, std::string("device:nccl"));
  auto it = child_.find(key);
  if (it != child_.end()) return it->second;
  Track t;
  t.kind = TrackKind::kSlices;
  t.parent_uuid = tracks_[p].uuid;
  t.name = std::string(kDeviceTrackName);
  t.pid = tracks_[p].pid;
  t.tid = NextId();
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
  uint32_t idx = Add(std::move(t));
  child_.emplace(key, idx);
  return idx;
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
  uint32_t idx = Add(std::move(t));
  l.tracks.push_back(idx);
  l.open_ends.push_back({end});
  return idx;
}

}  // namespace rs::exporter
