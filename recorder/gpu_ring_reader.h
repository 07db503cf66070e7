// The file half of reading recorder/plugin/gpu_ring.h: finds a process's region in
// /proc/PID/fd, decides whether the root recorder may map it at all, maps it and hands its
// bytes to GpuRingView (the protocol, with every value bounded). No BPF, no SQLite: the
// recorder's gpu probe drives it, and tests read their own process's region with it.
//
// The region is another process's memory file, and any local user can make one named like
// the plugin's. Mapping a file is safe only if it cannot shrink: a page past the end of a
// mapped file raises SIGBUS on access, which would kill the recorder (and its bundle) when the
// region's owner truncates it. So, in this order, and without a file of the owner's choosing
// ever being opened or stat'ed before it is known to be one:
//  1. the descriptor is opened O_PATH (no filesystem code runs) and its mount read from this
//     process's own /proc/self/fdinfo: it must be the kernel's shared-memory mount, where
//     every memfd lives (not hugetlbfs, whose pages can run out; not FUSE, whose open can
//     wait forever); only then is it opened read-write, through that same descriptor;
//  2. it must carry F_SEAL_SHRINK (the plugin seals its region before mapping it; seals are
//     never removed): its size can then only grow, so the size fstat reports after the seal
//     check is a lower bound for as long as the region exists, and mapping at most that many
//     bytes can never fault past the end. That is what makes SIGBUS impossible, on every
//     read, with no check per read: a per-read fstat would add nothing (the size cannot
//     shrink) and, without the seal, could not help either (the file can shrink between the
//     check and the access);
//  3. its owner must be the user of the process holding it (real, effective, saved and
//     filesystem uid all the file's owner): a region handed to another user's process (a
//     descriptor inherited over a set-uid exec, or passed over a socket) cannot put rows
//     under that process's pid. A user's own processes may hold their user's regions: their
//     rows are that user's data;
//  4. at most kGpuRegionMaxBytes are mapped, however large the file, and GpuRingView::Attach
//     checks the layout against what was mapped.
// /proc/PID is opened once and everything else of the process (its fd, its status) is read
// through that directory: a pid reused meanwhile fails the reads instead of mixing processes.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "recorder/gpu_ring_view.h"
#include "recorder/plugin/gpu_ring.h"
#include "rscore/result.h"

namespace rs::rec {

// The plugin's region in one process, found in /proc/PID/fd (a link named
// "/memfd:rankscope-gpu (deleted)"): by its name only, nothing is opened. nullopt: the process
// has none; an error: its descriptors cannot be listed (the message names the pid).
// `skip_fds`: descriptors not to consider (the recorder's own readers', when `pid` is the
// recorder itself: it maps every region it reads).
struct GpuRingLocation {
  std::string path;  // <proc_root>/PID/fd/N
};
rs::Result<std::optional<GpuRingLocation>> FindGpuRing(const std::string& proc_root, int pid,
                                                       const std::set<int>& skip_fds = {});

// The real, effective, saved and filesystem uid of a /proc/PID/status text ("Uid:" line).
std::optional<std::array<uint32_t, 4>> ParseStatusUids(std::string_view status);

class GpuRingReader {
 public:
  // Opens the region at `path` (<proc dir>/fd/N, as FindGpuRing gives it) after the checks
  // above, and maps it read-write (the reader writes only the heartbeat). On an error that
  // refuses the region itself, `*fault` (when given) says why; it stays unset when the
  // process went away or the recorder lacks a permission (the message says so).
  static rs::Result<GpuRingReader> Open(const std::string& path,
                                        std::optional<GpuRegionFault>* fault = nullptr);
  GpuRingReader(GpuRingReader&& other) noexcept;
  GpuRingReader& operator=(GpuRingReader&& other) noexcept;
  GpuRingReader(const GpuRingReader&) = delete;
  GpuRingReader& operator=(const GpuRingReader&) = delete;
  ~GpuRingReader();

  // GpuRingView's: records since the last read (none once the region is corrupt), the
  // operations in flight, the heartbeat.
  std::vector<rs_gpu_op> Read() { return view_.Read(); }
  std::vector<rs_gpu_op> InFlight() const { return view_.InFlight(); }
  void Heartbeat(int64_t now_ns) { view_.Heartbeat(now_ns); }

  const GpuRingView& view() const { return view_; }
  const rs_gpu_ring_header& header() const { return view_.header(); }  // live, untrusted
  uint64_t overruns() const { return view_.overruns(); }
  uint64_t read_records() const { return view_.read_records(); }
  bool from_start() const { return view_.from_start(); }
  uint64_t dev() const { return dev_; }  // the memfd: a forked child shares its parent's
  uint64_t ino() const { return ino_; }
  int fd() const { return fd_; }  // this process's descriptor of the region

 private:
  GpuRingReader() = default;
  void Release();

  int fd_ = -1;
  void* base_ = nullptr;
  size_t size_ = 0;
  uint64_t dev_ = 0, ino_ = 0;
  GpuRingView view_;
};

}  // namespace rs::rec
