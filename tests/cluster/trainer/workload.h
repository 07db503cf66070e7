// The trainer's host-side work: data loading from a file (optionally O_DIRECT, so every step
// really reaches the block device) and preprocessing (a calibrated amount of CPU work, which
// CPU contention stretches). Device work is in kernels.h.
#pragma once

#include <cstdint>
#include <string>

#include "rscore/result.h"

namespace trainer {

class DataLoader {
 public:
  // Opens (creating and filling it first if missing or too small) `path` of file_mb MiB.
  static rs::Result<DataLoader> Open(const std::string& path, int file_mb, bool direct);
  DataLoader(DataLoader&& other) noexcept;
  DataLoader& operator=(DataLoader&&) = delete;
  ~DataLoader();
  // Reads the next `kb` KiB (wrapping around) and checks the block stamps.
  rs::Result<void> ReadNext(int kb);
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  DataLoader() = default;
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t offset_ = 0;
  uint64_t bytes_read_ = 0;
  char* buf_ = nullptr;
  size_t buf_size_ = 0;
};

class Compute {
 public:
  // Measures how many work units the CPU does per millisecond.
  static Compute Calibrate();
  explicit Compute(double units_per_ms) : units_per_ms_(units_per_ms) {}
  // cpu_ms worth of CPU work (fixed work: takes longer when the CPU is contended).
  void Run(double cpu_ms) const;
  double units_per_ms() const { return units_per_ms_; }

 private:
  double units_per_ms_;
};

}  // namespace trainer
