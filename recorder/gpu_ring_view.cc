#include "recorder/gpu_ring_view.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

namespace rs::rec {
namespace {

// The region is shared with another process: its words change under us. Every field is read
// as an atomic (counters and stamps with acquire, as the plugin writes them with release);
// the fields of a record are copied plainly and validated by its stamp (a sequence lock).
template <typename T>
T Load(const T& v, std::memory_order order = std::memory_order_relaxed) {
  return std::atomic_ref<T>(const_cast<T&>(v)).load(order);
}
template <typename T>
T LoadAcquire(const T& v) {
  return Load(v, std::memory_order_acquire);
}

// A copy of `src` and whether it held still while copied (its stamp `stamp` before and after).
bool CopyStable(const rs_gpu_op& src, uint64_t stamp, rs_gpu_op& out) {
  std::memcpy(&out, &src, sizeof(out));
  std::atomic_thread_fence(std::memory_order_acquire);
  out.stamp = stamp;
  return Load(src.stamp) == stamp;
}

std::string Num(uint64_t v) { return std::to_string(v); }

}  // namespace

const char* GpuRegionFaultName(GpuRegionFault fault) {
  switch (fault) {
    case GpuRegionFault::kOwner:
      return "owner";
    case GpuRegionFault::kNotSealed:
      return "not_sealed";
    case GpuRegionFault::kLayout:
      return "layout";
    case GpuRegionFault::kChanged:
      return "changed";
  }
  return "?";
}

GpuRingView::Fixed GpuRingView::LoadFixed(const rs_gpu_ring_header& h) {
  Fixed f;
  f.magic = LoadAcquire(h.magic);  // written last by the plugin: the rest is there if it is
  f.version = Load(h.version);
  f.header_bytes = Load(h.header_bytes);
  f.record_bytes = Load(h.record_bytes);
  f.slot_count = Load(h.slot_count);
  f.ring_records = Load(h.ring_records);
  f.pid = Load(h.pid);
  return f;
}

rs::Result<GpuRingView> GpuRingView::Attach(void* base, size_t size) {
  if (size < RS_GPU_HEADER_BYTES) {
    return rs::Error("GPU ring of " + Num(size) + " bytes, shorter than its header (" +
                     Num(RS_GPU_HEADER_BYTES) +
                     "): not initialized yet, or not rankscope's plugin");
  }
  GpuRingView v;
  v.header_ = static_cast<rs_gpu_ring_header*>(base);
  const Fixed f = LoadFixed(*v.header_);
  if (f.magic != RS_GPU_RING_MAGIC) {
    return rs::Error(std::string("not a rankscope GPU ring (magic ") +
                     (f.magic == 0 ? "0: not initialized yet" : "mismatch") + ")");
  }
  if (f.version != RS_GPU_RING_VERSION) {
    return rs::Error("GPU ring version " + Num(f.version) + ", this recorder reads version " +
                     Num(RS_GPU_RING_VERSION) + " (use the plugin of the same rankscope release)");
  }
  if (f.header_bytes != RS_GPU_HEADER_BYTES || f.record_bytes != sizeof(rs_gpu_op)) {
    return rs::Error("GPU ring header of " + Num(f.header_bytes) + " bytes with records of " +
                     Num(f.record_bytes) + ", expected " + Num(RS_GPU_HEADER_BYTES) + " and " +
                     Num(sizeof(rs_gpu_op)) + " (a plugin of another layout)");
  }
  // The counts decide every index: each within this release's and the whole within `size`.
  if (f.slot_count == 0 || f.ring_records == 0 || f.slot_count > RS_GPU_SLOT_COUNT ||
      f.ring_records > RS_GPU_RING_RECORDS ||
      RS_GPU_REGION_BYTES(f.slot_count, f.ring_records) > size) {
    return rs::Error("GPU ring of " + Num(f.slot_count) + " slots and " + Num(f.ring_records) +
                     " records does not fit its " + Num(size) + " bytes (at most " +
                     Num(RS_GPU_SLOT_COUNT) + " slots and " + Num(RS_GPU_RING_RECORDS) +
                     " records)");
  }
  v.fixed_ = f;
  const auto* ops =
      reinterpret_cast<const rs_gpu_op*>(static_cast<const char*>(base) + RS_GPU_HEADER_BYTES);
  v.slots_ = ops;
  v.ring_ = ops + f.slot_count;
  if (std::string why; !v.CheckIntact(&why)) return rs::Error(why);
  // Where the first Read starts. A region some reader has read: at the head (the plugin
  // records only while a reader's heartbeat is fresh, and this one has not beaten yet, so
  // what the ring holds was recorded for an earlier reader, whose bundle has it). A region no
  // reader has read yet: at the beginning, the records of its startup window (gpu_ring.h);
  // the caller keeps those of its recording's window.
  const rs_gpu_ring_header& h = *v.header_;
  v.from_start_ = LoadAcquire(h.reader_heartbeat_ns) == 0 && Load(h.startup_until_ns) != 0;
  v.tail_ = v.from_start_ ? 0 : v.head_;
  return v;
}

bool GpuRingView::CheckIntact(std::string* why) {
  const rs_gpu_ring_header& h = *header_;
  if (!(LoadFixed(h) == fixed_)) {
    *why =
        "its header changed (magic, version, sizes, slot or record count, or pid): the "
        "plugin writes them once";
    return false;
  }
  // Counters the plugin only ever increments: never back, never past kGpuRegionMaxCount.
  const uint64_t head = LoadAcquire(h.head);
  GpuRingCounters c;
  c.ops = LoadAcquire(h.ops);
  c.ops_unrecorded = LoadAcquire(h.ops_unrecorded);
  c.drops_slots_full = LoadAcquire(h.drops_slots_full);
  c.drops_late_event = LoadAcquire(h.drops_late_event);
  c.ops_copy_engine = LoadAcquire(h.ops_copy_engine);
  c.graph_calls = LoadAcquire(h.graph_calls);
  c.graph_calls_unrecorded = LoadAcquire(h.graph_calls_unrecorded);
  c.graph_replay_ops = LoadAcquire(h.graph_replay_ops);
  const std::pair<const char*, std::pair<uint64_t, uint64_t>> counters[] = {
      {"head", {head_, head}},
      {"ops", {counters_.ops, c.ops}},
      {"ops_unrecorded", {counters_.ops_unrecorded, c.ops_unrecorded}},
      {"drops_slots_full", {counters_.drops_slots_full, c.drops_slots_full}},
      {"drops_late_event", {counters_.drops_late_event, c.drops_late_event}},
      {"ops_copy_engine", {counters_.ops_copy_engine, c.ops_copy_engine}},
      {"graph_calls", {counters_.graph_calls, c.graph_calls}},
      {"graph_calls_unrecorded", {counters_.graph_calls_unrecorded, c.graph_calls_unrecorded}},
      {"graph_replay_ops", {counters_.graph_replay_ops, c.graph_replay_ops}},
  };
  for (const auto& [name, values] : counters) {
    const auto [before, now] = values;
    if (now < before || now > kGpuRegionMaxCount) {
      *why = std::string("its counter ") + name + " went from " + Num(before) + " to " + Num(now);
      return false;
    }
  }
  c.proxy_times_off = LoadAcquire(h.proxy_times_off) != 0 ? 1 : 0;
  const int32_t api = LoadAcquire(h.api_version);
  c.api_version = api >= 4 && api <= 7 ? api : 0;
  head_ = head;
  counters_ = c;
  return true;
}

// The reader's half of gpu_ring.h's ring protocol.
std::vector<rs_gpu_op> GpuRingView::Read() {
  std::vector<rs_gpu_op> out;
  if (!header_ || corrupt() || !CheckIntact(&corruption_)) return out;
  const uint64_t n = fixed_.ring_records;  // as at Attach: 1..RS_GPU_RING_RECORDS
  const uint64_t head = head_;
  // tail_ <= head: tail_ starts at 0 or at the head of Attach and only moves up to a head
  // read since, and heads never go back (CheckIntact). So at most n records per read.
  if (head - tail_ > n) {  // records older than the ring holds: lost to the wrap
    overruns_ += head - n - tail_;
    tail_ = head - n;
  }
  while (tail_ < head) {
    const rs_gpu_op& r = ring_[tail_ % n];
    const uint64_t s = LoadAcquire(r.stamp);
    if (s == 0 || s < tail_ + 1) break;  // still being written: read again at the next poll
    rs_gpu_op copy;
    if (s == tail_ + 1 && CopyStable(r, s, copy)) {
      out.push_back(copy);
    } else {
      ++overruns_;  // a later record took its place before (or while) it was read
    }
    ++tail_;
  }
  return out;
}

std::vector<rs_gpu_op> GpuRingView::InFlight() const {
  std::vector<rs_gpu_op> out;
  if (!header_ || corrupt() || !(LoadFixed(*header_) == fixed_)) return out;
  for (uint32_t i = 0; i < fixed_.slot_count; ++i) {
    const rs_gpu_op& slot = slots_[i];
    // A slot that changes while copied is tried once more; one still changing is left out
    // (its operation finished into the ring, or a new one is being filled in).
    for (int attempt = 0; attempt < 2; ++attempt) {
      const uint64_t s = LoadAcquire(slot.stamp);
      if (s == 0) break;
      rs_gpu_op copy;
      if (CopyStable(slot, s, copy)) {
        out.push_back(copy);
        break;
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const rs_gpu_op& a, const rs_gpu_op& b) {
    return a.enqueue_ns != b.enqueue_ns ? a.enqueue_ns < b.enqueue_ns : a.seq < b.seq;
  });
  return out;
}

void GpuRingView::Heartbeat(int64_t now_ns) {
  if (!header_) return;
  std::atomic_ref<int64_t>(header_->reader_heartbeat_ns).store(now_ns, std::memory_order_release);
}

}  // namespace rs::rec
