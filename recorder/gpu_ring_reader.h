// The reading half of recorder/plugin/gpu_ring.h: maps one process's shared region (opened
// from /proc/PID/fd), checks its header, and returns the records written since the last read
// (the ring protocol in gpu_ring.h), the operations still in flight (the slots), and the
// plugin's own counters. No BPF, no SQLite: the recorder's gpu probe drives it, and tests read
// their own process's region with it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "recorder/plugin/gpu_ring.h"
#include "rscore/result.h"

namespace rec {

// The plugin's region in one process, found in /proc/PID/fd (a link named
// "/memfd:rankscope-gpu (deleted)"). nullopt: the process has none; an error: it has one that
// could not be opened or mapped (the message names the pid and what failed).
struct GpuRingLocation {
  std::string path;           // <proc_root>/PID/fd/N
  uint64_t dev = 0, ino = 0;  // identifies the region (a forked child shares its parent's)
};
rs::Result<std::optional<GpuRingLocation>> FindGpuRing(const std::string& proc_root, int pid);

class GpuRingReader {
 public:
  // Opens and maps the region read-write (the reader writes only the heartbeat). Refuses a
  // region whose magic, version, record size or sizes do not match this build's gpu_ring.h.
  static rs::Result<GpuRingReader> Open(const std::string& path);
  GpuRingReader(GpuRingReader&& other) noexcept;
  GpuRingReader& operator=(GpuRingReader&& other) noexcept;
  GpuRingReader(const GpuRingReader&) = delete;
  GpuRingReader& operator=(const GpuRingReader&) = delete;
  ~GpuRingReader();

  // Records written since the last call (the first call: since Open, or, where no reader had
  // read the region yet, since its creation: its startup window), in ring order; records overwritten before they were
  // read are counted in overruns(). A record still being written ends the read (it is
  // returned by a later call).
  std::vector<rs_gpu_op> Read();
  // A snapshot of the operations in flight (slots in use), oldest enqueue first.
  std::vector<rs_gpu_op> InFlight() const;
  // Tells the plugin a reader is there (CLOCK_MONOTONIC ns).
  void Heartbeat(int64_t now_ns);

  const rs_gpu_ring_header& header() const { return *header_; }  // live: fields change
  uint64_t overruns() const { return overruns_; }  // records lost to the ring wrapping
  uint64_t read_records() const { return tail_; }  // next record index to read
  // Reading began at the ring's first record (a startup window no reader had read), not at
  // the head as it was at Open.
  bool from_start() const { return from_start_; }

 private:
  GpuRingReader() = default;
  void Release();

  int fd_ = -1;
  void* base_ = nullptr;
  size_t size_ = 0;
  rs_gpu_ring_header* header_ = nullptr;
  const rs_gpu_op* slots_ = nullptr;
  const rs_gpu_op* ring_ = nullptr;
  uint64_t tail_ = 0;
  uint64_t overruns_ = 0;
  bool from_start_ = false;
};

}  // namespace rec
