#include "workload.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace trainer {
namespace {

constexpr size_t kBlock = 4096;
volatile uint64_t g_sink = 0;
volatile uint64_t g_calibration_units = 20000;  // volatile: measured exactly like Run()'s work

__attribute__((noinline)) uint64_t Work(uint64_t units) {
  uint64_t x = 0x9e3779b97f4a7c15ull ^ units;
  for (uint64_t i = 0; i < units * 64; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

rs::Result<void> FillFile(const std::string& path, uint64_t size) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return rs::Error(path + ": cannot create data file: " + std::strerror(errno));
  std::vector<char> chunk(1 << 20);
  for (uint64_t off = 0; off < size; off += chunk.size()) {
    for (size_t b = 0; b < chunk.size(); b += kBlock) {
      uint64_t stamp = (off + b) / kBlock;
      std::memset(chunk.data() + b, static_cast<int>(stamp & 0xff), kBlock);
      std::memcpy(chunk.data() + b, &stamp, sizeof(stamp));
    }
    if (write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size())) {
      std::string why = std::strerror(errno);
      close(fd);
      return rs::Error(path + ": writing data file failed: " + why);
    }
  }
  fsync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  return rs::Ok();
}

}  // namespace

rs::Result<DataLoader> DataLoader::Open(const std::string& path, int file_mb, bool direct) {
  uint64_t size = static_cast<uint64_t>(file_mb) << 20;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) < size) {
    RETURN_IF_ERROR(FillFile(path, size));
  }
  DataLoader d;
  d.path_ = path;
  d.size_ = size;
  d.fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
  if (d.fd_ < 0) {
    return rs::Error(path + ": cannot open data file" + (direct ? " with O_DIRECT" : "") + ": " +
                     std::strerror(errno));
  }
  return d;
}

DataLoader::DataLoader(DataLoader&& o) noexcept
    : path_(std::move(o.path_)),
      fd_(o.fd_),
      size_(o.size_),
      offset_(o.offset_),
      bytes_read_(o.bytes_read_),
      buf_(o.buf_),
      buf_size_(o.buf_size_) {
  o.fd_ = -1;
  o.buf_ = nullptr;
}

DataLoader::~DataLoader() {
  if (fd_ >= 0) close(fd_);
  std::free(buf_);
}

rs::Result<void> DataLoader::ReadNext(int kb) {
  size_t want = static_cast<size_t>(kb) * 1024;
  if (buf_size_ < want) {
    std::free(buf_);
    buf_ = nullptr;
    if (posix_memalign(reinterpret_cast<void**>(&buf_), kBlock, want) != 0) {
      return rs::Error("out of memory for a " + std::to_string(kb) + " KiB read buffer");
    }
    buf_size_ = want;
  }
  if (offset_ + want > size_) offset_ = 0;
  ssize_t got = pread(fd_, buf_, want, static_cast<off_t>(offset_));
  if (got != static_cast<ssize_t>(want)) {
    return rs::Error(path_ + ": short read at offset " + std::to_string(offset_) + ": " +
                     (got < 0 ? std::strerror(errno) : "end of file"));
  }
  for (size_t b = 0; b < want; b += kBlock) {
    uint64_t stamp = 0;
    std::memcpy(&stamp, buf_ + b, sizeof(stamp));
    if (stamp != (offset_ + b) / kBlock) {
      return rs::Error(path_ + ": corrupt data block at offset " + std::to_string(offset_ + b));
    }
  }
  offset_ += want;
  bytes_read_ += want;
  return rs::Ok();
}

Compute Compute::Calibrate() {
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    g_sink = g_sink + Work(g_calibration_units);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(g_calibration_units) / std::max(ms, 1e-3));
  }
  return Compute(best);
}

void Compute::Run(double cpu_ms) const {
  if (cpu_ms > 0) g_sink = g_sink + Work(static_cast<uint64_t>(cpu_ms * units_per_ms_));
}

}  // namespace trainer
