// What the plugin's tests share: the library under test (RS_GPU_PLUGIN, loaded once), the
// test process's own region read through the recorder's reader, and the masks.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "recorder/gpu_ring_reader.h"
#include "recorder/plugin/gpu_ring.h"
#include "rscore/nccl_profiler.h"

namespace rs_test {

constexpr int kDeviceEvents = ncclProfileKernelCh | ncclProfileProxyOp | ncclProfileProxyStep;
constexpr int kBaseMaskV5 = ncclProfileColl | ncclProfileP2p | ncclProfileCollApi |
                            ncclProfileP2pApi | ncclProfileKernelLaunch;
constexpr int kBaseMaskV4 = ncclProfileColl | ncclProfileP2p;

inline int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

inline int Gettid() { return static_cast<int>(syscall(SYS_gettid)); }

inline void* PluginLibrary() {
  static void* lib = [] {
    const char* path = std::getenv("RS_GPU_PLUGIN");
    return path != nullptr ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
  }();
  return lib;
}
inline const ncclProfiler_v5_t* PluginV5() {
  void* lib = PluginLibrary();
  return lib ? static_cast<const ncclProfiler_v5_t*>(dlsym(lib, "ncclProfiler_v5")) : nullptr;
}
inline const ncclProfiler_v7_t* PluginV7() {
  void* lib = PluginLibrary();
  return lib ? static_cast<const ncclProfiler_v7_t*>(dlsym(lib, "ncclProfiler_v7")) : nullptr;
}
inline const ncclProfiler_v6_t* PluginV6() {
  void* lib = PluginLibrary();
  return lib ? static_cast<const ncclProfiler_v6_t*>(dlsym(lib, "ncclProfiler_v6")) : nullptr;
}
inline const ncclProfiler_v4_t* PluginV4() {
  void* lib = PluginLibrary();
  return lib ? static_cast<const ncclProfiler_v4_t*>(dlsym(lib, "ncclProfiler_v4")) : nullptr;
}

// This process's region, as the recorder reads it (opened at the first call: after an init).
inline rs::rec::GpuRingReader* OwnRing() {
  static std::optional<rs::rec::GpuRingReader> reader;
  if (reader) return &*reader;
  auto where = rs::rec::FindGpuRing("/proc", getpid());
  if (!where.ok() || !where.value()) return nullptr;
  auto r = rs::rec::GpuRingReader::Open(where.value()->path);
  if (!r.ok()) return nullptr;
  reader.emplace(std::move(r).value());
  return &*reader;
}

// A recorder reading now (its heartbeat fresh), or none (never beat).
inline void SetReader(bool present) { OwnRing()->Heartbeat(present ? NowNs() : 0); }

// The plugin's counters (gpu_ring.h), read at once.
struct Counters {
  uint64_t ops, unrecorded, slots_full, late;
  static Counters Of(const rs_gpu_ring_header& h) {
    return {__atomic_load_n(&h.ops, __ATOMIC_ACQUIRE),
            __atomic_load_n(&h.ops_unrecorded, __ATOMIC_ACQUIRE),
            __atomic_load_n(&h.drops_slots_full, __ATOMIC_ACQUIRE),
            __atomic_load_n(&h.drops_late_event, __ATOMIC_ACQUIRE)};
  }
  Counters Since(const Counters& before) const {
    return {ops - before.ops, unrecorded - before.unrecorded, slots_full - before.slots_full,
            late - before.late};
  }
};

}  // namespace rs_test
