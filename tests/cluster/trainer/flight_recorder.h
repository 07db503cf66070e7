// What PyTorch's Flight Recorder does for a rank (--fr-dump-dir): every collective the rank
// issues is an entry (process group 0, its collective_seq_id, profiling name, sizes, dtype,
// time created) with CUDA events recorded around it on the communication stream; a watchdog
// thread queries them (started / completed, with the times it noticed) and, once no entry has
// completed for the timeout while one is pending or the rank issued nothing more, writes the
// rank's dump once: DIR/nccl_trace_rank_<rank>, a pickle (protocol 2, as PyTorch's C++ pickler
// writes it) in the documented layout of schema version 2.10. Written to a temporary name
// and renamed, so a reader never sees half a dump.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_runtime_api.h"

namespace trainer {

class FlightRecorder {
 public:
  FlightRecorder(std::string dir, int rank, int world_size, int timeout_ms);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // Before issuing a collective on `stream`: its entry and start event.
  void Begin(const char* name, int64_t count, const char* dtype, cudaStream_t stream);
  // After issuing it: the end event.
  void End(cudaStream_t stream);

 private:
  struct Entry {
    int64_t seq = 0;
    std::string name, dtype;
    int64_t count = 0;
    int64_t created_ns = 0, started_ns = 0, completed_ns = 0;
    cudaEvent_t start = nullptr, end = nullptr;
  };
  void Run();
  void Poll();                 // under mu_
  std::string Pickle() const;  // under mu_

  std::string dir_;
  int rank_, world_size_, timeout_ms_;
  std::mutex mu_;
  std::vector<Entry> entries_;
  int64_t last_progress_ns_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace trainer
