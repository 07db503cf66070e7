// The recorder's shared ring-buffer poller. Every probe adds its BPF ring buffer(s) here with
// the callback that decodes and stores one record.
//
// Two modes, same callbacks, same order of records per ring:
//  - direct (tests, start-up, finish): Consume() reads the rings and runs the callbacks on the
//    calling thread, as libbpf's ring_buffer__consume does;
//  - drained (while recording): a drain thread empties the kernel rings into memory batches as
//    soon as records arrive, and the event-loop thread runs the callbacks (decode + SQLite
//    insert) on those batches. The kernel rings then only have to absorb the drain thread's
//    scheduling delays, not the cost of the inserts, and the inserts run in large batches
//    (cheaper per row). The batches are bounded (max_queued_bytes, counting those being
//    written, plus at most what the kernel rings hold when the thread is stopped): when the
//    event-loop thread falls that far behind, the drain thread
//    stops reading, the kernel rings fill, and the BPF side counts every record it cannot
//    reserve (`sources.drops`) — nothing is lost without being counted.
// The callbacks always run on the thread that calls Consume / WaitAndDispatch, never on the
// drain thread, so probes need no locking.
#pragma once

#include <bpf/libbpf.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "rscore/result.h"

namespace rs::rec {

class RingPoller {
 public:
  // `publish_period_ns`: how long a partial batch may wait (see Add); tests lengthen it.
  explicit RingPoller(int64_t publish_period_ns = kDefaultPublishPeriodNs)
      : publish_period_ns_(publish_period_ns) {}
  ~RingPoller();  // stops the drain thread (queued records are discarded), frees the poller
  RingPoller(const RingPoller&) = delete;
  RingPoller& operator=(const RingPoller&) = delete;

  // Adds one BPF ring-buffer map. Not while the drain thread runs. The records of an
  // `urgent` ring are handed to the event-loop thread as soon as the drain thread reads them
  // (others wait for a full batch or the next publish period, 50 ms by default).
  enum class Delivery { kBatched, kUrgent };
  rs::Result<void> Add(int map_fd, ring_buffer_sample_fn fn, void* fn_ctx,
                       Delivery delivery = Delivery::kBatched);
  bool empty() const { return rb_ == nullptr; }

  // Runs the callback of every record submitted before this call, on this thread.
  void Consume();

  // Drained mode. StartDrainThread: from now on the rings are read by the drain thread.
  rs::Result<void> StartDrainThread(size_t max_queued_bytes = kDefaultMaxQueuedBytes);
  // Waits up to timeout_ms for drained records and runs their callbacks. In direct mode it
  // polls the rings itself (ring_buffer__poll + consume).
  void WaitAndDispatch(int timeout_ms);
  // Joins the drain thread and runs the callbacks of what it had queued; back to direct mode.
  void StopDrainThread();

  // Counters (for tests and the benchmark), read after StopDrainThread: batches handed
  // over, most bytes ever queued, CPU time the drain thread used.
  uint64_t batches() const { return batches_; }
  size_t peak_queued_bytes() const { return peak_queued_bytes_; }
  int64_t drain_cpu_ns() const { return drain_cpu_ns_; }

  static constexpr size_t kDefaultMaxQueuedBytes = 64u << 20;
  // A partial batch is handed to the event-loop thread at least this often (it then wakes
  // ~20 times a second at low rates instead of once per read of the rings).
  static constexpr int64_t kDefaultPublishPeriodNs = 50'000'000;

 private:
  struct Ring {
    RingPoller* poller;
    uint32_t index;
    ring_buffer_sample_fn fn;
    void* fn_ctx;
    Delivery delivery;
  };
  using Batch = std::vector<uint8_t>;

  static int OnRecord(void* ring, void* data, size_t size);
  void Append(const Ring& ring, const void* data, size_t size);  // drain thread
  void Publish(bool flushed_up_to_request, uint64_t request);    // drain thread
  void DrainMain();                                              // drain thread body
  void JoinDrainThread();                     // asks the drain thread to stop and waits for it
  void Dispatch(std::deque<Batch>& batches);  // calling thread
  bool draining() const { return thread_.joinable(); }

  ring_buffer* rb_ = nullptr;
  std::vector<std::unique_ptr<Ring>> rings_;

  // Drained mode.
  std::thread thread_;
  int epoll_fd_ = -1, wake_fd_ = -1;
  size_t max_queued_bytes_ = kDefaultMaxQueuedBytes;
  int64_t publish_period_ns_;
  Batch filling_;               // drain thread only
  bool urgent_filled_ = false;  // drain thread only: filling_ holds an urgent record
  std::mutex mu_;
  std::condition_variable ready_cv_;  // queue non-empty, flush done, or thread stopped
  std::condition_variable space_cv_;  // queued bytes fell under the limit, or stop
  std::deque<Batch> queue_;           // guarded by mu_
  std::vector<Batch> spare_;          // emptied batches for reuse; guarded by mu_
  size_t queued_bytes_ = 0;           // queued + being dispatched; guarded by mu_
  uint64_t flush_requested_ = 0;      // guarded by mu_
  uint64_t flush_done_ = 0;           // guarded by mu_
  bool stop_ = false;                 // guarded by mu_
  uint64_t batches_ = 0;
  size_t peak_queued_bytes_ = 0;
  int64_t drain_cpu_ns_ = 0;
};

}  // namespace rs::rec
