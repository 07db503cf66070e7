// For the tests of rankscope's NCCL profiler plugin on the test bed: each rank (a forked
// process, test_ranks.h) reads its own region with the recorder's reader and leaves what it
// read in a file; the test process loads every rank's report and checks them side by side.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "child_check.h"
#include "cuda_runtime_api.h"
#include "recorder/gpu_ring_reader.h"
#include "recorder/plugin/gpu_ring.h"
#include "test_ranks.h"  // the test bed's nccl.h (bpf/abi has one too)

namespace rs_testbed {

inline int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

inline std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// The calling process's region (after its first communicator's init), as the recorder opens it.
inline std::optional<rs::rec::GpuRingReader> OpenOwnRing() {
  auto where = rs::rec::FindGpuRing("/proc", getpid());
  if (!where.ok() || !where.value()) return std::nullopt;
  auto reader = rs::rec::GpuRingReader::Open(where.value()->path);
  if (!reader.ok()) return std::nullopt;
  return std::move(reader).value();
}

// What one rank saw.
struct RankReport {
  int32_t pid = 0;
  int64_t done_ns = 0;  // after its last stream synchronization
  rs_gpu_ring_header header{};
  std::vector<rs_gpu_op> records;    // read from the ring
  std::vector<rs_gpu_op> in_flight;  // the slots, when it looked

  bool Save(const std::string& path) const {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return false;
    const uint64_t n = records.size(), m = in_flight.size();
    bool ok = std::fwrite(&pid, sizeof(pid), 1, f) == 1 &&
              std::fwrite(&done_ns, sizeof(done_ns), 1, f) == 1 &&
              std::fwrite(&header, sizeof(header), 1, f) == 1 &&
              std::fwrite(&n, sizeof(n), 1, f) == 1 && std::fwrite(&m, sizeof(m), 1, f) == 1 &&
              (n == 0 || std::fwrite(records.data(), sizeof(rs_gpu_op), n, f) == n) &&
              (m == 0 || std::fwrite(in_flight.data(), sizeof(rs_gpu_op), m, f) == m);
    return std::fclose(f) == 0 && ok;
  }
  static std::optional<RankReport> Load(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) return std::nullopt;
    RankReport r;
    uint64_t n = 0, m = 0;
    bool ok = std::fread(&r.pid, sizeof(r.pid), 1, f) == 1 &&
              std::fread(&r.done_ns, sizeof(r.done_ns), 1, f) == 1 &&
              std::fread(&r.header, sizeof(r.header), 1, f) == 1 &&
              std::fread(&n, sizeof(n), 1, f) == 1 && std::fread(&m, sizeof(m), 1, f) == 1 &&
              n < 100000 && m < 100000;
    if (ok) {
      r.records.resize(n);
      r.in_flight.resize(m);
      ok = (n == 0 || std::fread(r.records.data(), sizeof(rs_gpu_op), n, f) == n) &&
           (m == 0 || std::fread(r.in_flight.data(), sizeof(rs_gpu_op), m, f) == m);
    }
    std::fclose(f);
    if (!ok) return std::nullopt;
    return r;
  }
};

inline constexpr int64_t kDeviceOffset = 4'000'000'000;

// Every rank's library finds the plugin by its path and runs collectives asynchronously, on a
// device clock kDeviceOffset ahead of the host's.
inline void UsePlugin(const std::string& setting) {
  setenv("NCCL_PROFILER_PLUGIN", setting.c_str(), 1);
  setenv("RANKSCOPE_TESTLIB_COLLECTIVES", "async", 1);
  setenv("RANKSCOPE_CUDA_CPU_CLOCK", std::to_string(kDeviceOffset).c_str(), 1);
}

// What a rank does after its region exists: a reader appears, one call switches NCCL's mask
// to device events (that call itself is not recorded), then the calls under test.
inline int Attach(std::optional<rs::rec::GpuRingReader>* ring, ncclComm_t comm, cudaStream_t s) {
  *ring = OpenOwnRing();
  CHILD_CHECK(ring->has_value());
  (*ring)->Heartbeat(NowNs());
  static float warm[3] = {1, 2, 3};
  CHILD_CHECK(ncclAllReduce(warm, warm, 3, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  return 0;
}

inline int Finish(rs::rec::GpuRingReader& ring, ncclComm_t comm, const std::string& path) {
  RankReport report;
  report.pid = getpid();
  report.done_ns = NowNs();
  CHILD_CHECK(ncclCommDestroy(comm) == ncclSuccess);
  report.records = ring.Read();
  report.in_flight = ring.InFlight();
  report.header = ring.header();
  CHILD_CHECK(report.Save(path));
  return 0;
}

// A directory for the ranks' reports, removed with its files at the end.
class ReportDir {
 public:
  ReportDir() {
    char tmpl[] = "/tmp/rs-gpu-plugin-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) dir_ = tmpl;
  }
  ~ReportDir() {
    if (dir_.empty()) return;
    std::string cmd = "rm -rf '" + dir_ + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir_.c_str());
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::string Rank(int r) const { return Path("rank" + std::to_string(r)); }
  std::vector<RankReport> LoadAll(int n) const {
    std::vector<RankReport> out;
    for (int r = 0; r < n; ++r) {
      std::optional<RankReport> report = RankReport::Load(Rank(r));
      EXPECT_TRUE(report.has_value()) << "rank " << r << " left no report";
      if (report) out.push_back(std::move(*report));
    }
    return out;
  }

 private:
  std::string dir_;
};

}  // namespace rs_testbed
