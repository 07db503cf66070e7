#include "recorder/ring_poller.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "rscore/clock.h"

namespace rs::rec {
namespace {

// The drain thread reads the rings at least this often: the BPF side submits most records
// without waking the reader (adaptive wakeup), so a timer must pick them up.
constexpr int kDrainPeriodMs = 10;
// A batch is handed to the event-loop thread when it reaches this size or when a read of the
// rings ends, whichever comes first.
constexpr size_t kBatchBytes = 1u << 20;
constexpr size_t kMaxSpareBatches = 8;

// One record in a batch: this header, then the record's bytes padded to 8 so every record
// starts 8-byte aligned (the callbacks read them as the BPF structs).
struct RecordHeader {
  uint32_t ring;
  uint32_t size;
};
static_assert(sizeof(RecordHeader) == 8);

constexpr size_t Padded(size_t n) { return (n + 7) & ~size_t{7}; }

thread_local bool tl_on_drain_thread = false;

}  // namespace

RingPoller::~RingPoller() {
  if (draining()) JoinDrainThread();  // queued records are discarded
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  if (rb_) ring_buffer__free(rb_);
}

rs::Result<void> RingPoller::Add(int map_fd, ring_buffer_sample_fn fn, void* fn_ctx,
                                 Delivery delivery) {
  if (draining()) return rs::Error("ring buffers cannot be added while the drain thread runs");
  auto ring = std::make_unique<Ring>(
      Ring{this, static_cast<uint32_t>(rings_.size()), fn, fn_ctx, delivery});
  if (rb_ == nullptr) {
    rb_ = ring_buffer__new(map_fd, &RingPoller::OnRecord, ring.get(), nullptr);
    if (rb_ == nullptr) {
      return rs::Error(std::string("cannot create the ring buffer poller: ") +
                       std::strerror(errno));
    }
  } else if (ring_buffer__add(rb_, map_fd, &RingPoller::OnRecord, ring.get()) != 0) {
    return rs::Error(std::string("cannot add a ring buffer to the poller: ") +
                     std::strerror(errno));
  }
  rings_.push_back(std::move(ring));
  return rs::Ok();
}

int RingPoller::OnRecord(void* ring_ptr, void* data, size_t size) {
  const Ring& ring = *static_cast<const Ring*>(ring_ptr);
  if (tl_on_drain_thread) {
    ring.poller->Append(ring, data, size);
    return 0;
  }
  return ring.fn(ring.fn_ctx, data, size);
}

void RingPoller::Append(const Ring& ring, const void* data, size_t size) {
  const size_t at = filling_.size();
  filling_.resize(at + sizeof(RecordHeader) + Padded(size));
  RecordHeader h{ring.index, static_cast<uint32_t>(size)};
  std::memcpy(filling_.data() + at, &h, sizeof(h));
  std::memcpy(filling_.data() + at + sizeof(h), data, size);
  urgent_filled_ |= ring.delivery == Delivery::kUrgent;
  if (filling_.size() >= kBatchBytes) Publish(/*flushed_up_to_request=*/false, 0);
}

void RingPoller::Publish(bool flushed_up_to_request, uint64_t request) {
  urgent_filled_ = false;
  std::unique_lock<std::mutex> lk(mu_);
  if (!filling_.empty()) {
    // Back-pressure: while the event-loop thread is this far behind, stop reading the rings.
    space_cv_.wait(lk, [&] { return stop_ || queued_bytes_ < max_queued_bytes_; });
    queued_bytes_ += filling_.size();
    peak_queued_bytes_ = std::max(peak_queued_bytes_, queued_bytes_);
    queue_.push_back(std::move(filling_));
    ++batches_;
    if (!spare_.empty()) {
      filling_ = std::move(spare_.back());
      spare_.pop_back();
    } else {
      filling_ = Batch();
    }
    filling_.clear();
  }
  if (flushed_up_to_request) flush_done_ = std::max(flush_done_, request);
  lk.unlock();
  ready_cv_.notify_all();
}

void RingPoller::DrainMain() {
  tl_on_drain_thread = true;
  filling_.reserve(kBatchBytes + 4096);
  epoll_event events[2];
  int64_t last_publish = rs::MonotonicNowNs();
  uint64_t published_request = 0;
  for (;;) {
    int n = epoll_wait(epoll_fd_, events, 2, kDrainPeriodMs);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == wake_fd_) {
        uint64_t v;
        (void)!read(wake_fd_, &v, sizeof(v));
      }
    }
    uint64_t request;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (stop_) break;
      request = flush_requested_;  // every record submitted before this request is read below
    }
    ring_buffer__consume(rb_);
    const int64_t now = rs::MonotonicNowNs();
    if (request != published_request || urgent_filled_ ||
        now - last_publish >= publish_period_ns_) {
      Publish(/*flushed_up_to_request=*/true, request);
      published_request = request;
      last_publish = now;
    }
  }
  Publish(/*flushed_up_to_request=*/false, 0);  // a partial batch is never left behind
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  drain_cpu_ns_ += static_cast<int64_t>(cpu.tv_sec) * 1'000'000'000 + cpu.tv_nsec;
}

rs::Result<void> RingPoller::StartDrainThread(size_t max_queued_bytes) {
  if (rb_ == nullptr || draining()) return rs::Ok();
  max_queued_bytes_ = max_queued_bytes;
  if (epoll_fd_ < 0) {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epoll_fd_ < 0 || wake_fd_ < 0) {
      return rs::Error(std::string("ring buffer drain thread: ") + std::strerror(errno));
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = ring_buffer__epoll_fd(rb_);
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, ev.data.fd, &ev) != 0) {
      return rs::Error(std::string("ring buffer drain thread: epoll: ") + std::strerror(errno));
    }
    ev.data.fd = wake_fd_;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) {
      return rs::Error(std::string("ring buffer drain thread: epoll: ") + std::strerror(errno));
    }
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = false;
  }
  // Stop signals are for the event-loop thread: the drain thread blocks them all.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  thread_ = std::thread([this] { DrainMain(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return rs::Ok();
}

void RingPoller::Dispatch(std::deque<Batch>& batches) {
  size_t bytes = 0;
  for (Batch& b : batches) {
    bytes += b.size();
    size_t at = 0;
    while (at + sizeof(RecordHeader) <= b.size()) {
      RecordHeader h;
      std::memcpy(&h, b.data() + at, sizeof(h));
      uint8_t* data = b.data() + at + sizeof(h);
      const Ring& ring = *rings_[h.ring];
      ring.fn(ring.fn_ctx, data, h.size);
      at += sizeof(h) + Padded(h.size);
    }
  }
  {
    // The bytes count against the limit until their rows are written.
    std::lock_guard<std::mutex> lk(mu_);
    queued_bytes_ -= bytes;
    for (Batch& b : batches) {
      if (spare_.size() >= kMaxSpareBatches) break;
      b.clear();
      spare_.push_back(std::move(b));
    }
  }
  space_cv_.notify_all();
  batches.clear();
}

void RingPoller::WaitAndDispatch(int timeout_ms) {
  if (rb_ == nullptr) {
    usleep(static_cast<useconds_t>(timeout_ms) * 1000);
    return;
  }
  if (!draining()) {
    ring_buffer__poll(rb_, timeout_ms);
    ring_buffer__consume(rb_);  // records submitted without a wakeup
    return;
  }
  std::deque<Batch> taken;
  {
    std::unique_lock<std::mutex> lk(mu_);
    ready_cv_.wait_for(lk, std::chrono::milliseconds(timeout_ms),
                       [&] { return !queue_.empty() || stop_; });
    taken.swap(queue_);
  }
  Dispatch(taken);
}

void RingPoller::Consume() {
  if (rb_ == nullptr) return;
  if (!draining()) {
    ring_buffer__consume(rb_);
    return;
  }
  std::unique_lock<std::mutex> lk(mu_);
  const uint64_t want = ++flush_requested_;
  lk.unlock();
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  lk.lock();
  for (;;) {
    // Batches queued while waiting are dispatched at once, so a drain thread held back by
    // back-pressure can always finish the flush.
    ready_cv_.wait(lk, [&] { return !queue_.empty() || flush_done_ >= want || stop_; });
    const bool done = flush_done_ >= want || stop_;
    std::deque<Batch> taken;
    taken.swap(queue_);
    lk.unlock();
    Dispatch(taken);
    if (done) return;
    lk.lock();
  }
}

void RingPoller::JoinDrainThread() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  space_cv_.notify_all();
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  thread_.join();
}

void RingPoller::StopDrainThread() {
  if (!draining()) return;
  JoinDrainThread();
  std::deque<Batch> taken;
  {
    std::lock_guard<std::mutex> lk(mu_);
    taken.swap(queue_);
  }
  Dispatch(taken);  // direct mode from here: Consume reads whatever is left in the rings
}

}  // namespace rs::rec
