#include "recorder/gpu_heartbeat.h"

#include <chrono>

#include "recorder/gpu_ring_reader.h"
#include "rscore/clock.h"

namespace rs::rec {

void GpuHeartbeat::Start() {
  std::lock_guard<std::mutex> lk(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  alive_ns_ = rs::MonotonicNowNs();
  thread_ = std::thread([this] { Run(); });
}

void GpuHeartbeat::Stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GpuHeartbeat::Add(const void* key, GpuRingReader* reader, int64_t now_ns) {
  std::lock_guard<std::mutex> lk(mu_);
  readers_[key] = reader;
  reader->Heartbeat(now_ns);
}

void GpuHeartbeat::Remove(const void* key) {
  std::lock_guard<std::mutex> lk(mu_);
  readers_.erase(key);
}

void GpuHeartbeat::LoopAlive(int64_t now_ns) {
  std::lock_guard<std::mutex> lk(mu_);
  alive_ns_ = now_ns;
}

uint64_t GpuHeartbeat::beats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return beats_;
}

void GpuHeartbeat::Run() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    const int64_t now = rs::MonotonicNowNs();
    if (now - alive_ns_ < kLoopStallNs) {
      // Only the header's heartbeat word is written (an atomic store): the loop may read the
      // same region meanwhile.
      for (auto& [key, reader] : readers_) reader->Heartbeat(now);
      ++beats_;
    }
    cv_.wait_for(lk, std::chrono::nanoseconds(kPeriodNs), [this] { return stop_; });
  }
}

}  // namespace rs::rec
