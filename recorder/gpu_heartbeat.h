// The heartbeat that tells the NCCL profiler plugin a recorder reads its region, beaten from a
// thread of its own. The plugin records operations only while the heartbeat is younger than
// RS_GPU_READER_TIMEOUT_NS (2 s; gpu_ring.h) and counts them unrecorded otherwise. Beaten from
// the recording loop, it went stale whenever one round of the loop ran long: on a 2-vCPU VM
// running 8 ranks and 4 recorders, a round's decoding and the NCCL and CUDA probes' flushes took
// up to 2.7 s each, and the plugins stopped recording for 1.5 s at a time (a third of a 30-step
// job's collectives lost their device times). The ring keeps 8192 finished records for the
// reader (about 11 s of a test-bed rank's operations), so a late read loses nothing; what the
// ring cannot hold is counted as overrun. The thread beats only while the loop is alive (it
// ticked in the last kLoopStallNs): a recorder stuck for good lets the plugin stop recording.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

namespace rs::rec {

class GpuRingReader;

class GpuHeartbeat {
 public:
  // A loop that has not ticked for this long is stuck: no more beats.
  static constexpr int64_t kLoopStallNs = 10'000'000'000;
  static constexpr int64_t kPeriodNs = 250'000'000;

  GpuHeartbeat() = default;
  ~GpuHeartbeat() { Stop(); }
  GpuHeartbeat(const GpuHeartbeat&) = delete;
  GpuHeartbeat& operator=(const GpuHeartbeat&) = delete;

  void Start();
  void Stop();  // joins the thread; Add/Remove still work (nothing beats)
  // The region's reader (kept alive until Remove) is beaten from now on; beats it once at once.
  void Add(const void* key, GpuRingReader* reader, int64_t now_ns);
  void Remove(const void* key);  // before the reader goes away
  void LoopAlive(int64_t now_ns);
  uint64_t beats() const;  // rounds that beat every region (tests)

 private:
  void Run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<const void*, GpuRingReader*> readers_;
  int64_t alive_ns_ = 0;
  bool stop_ = false;
  uint64_t beats_ = 0;
  std::thread thread_;
};

}  // namespace rs::rec
