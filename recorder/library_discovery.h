// Finds every copy of libnccl / libcudart / libcuda that running processes map: scans
// <proc_root>/*/maps (or only the --pid processes), resolves each mapped path through
// <proc_root>/PID/root (containers, other mount namespaces), and reports each distinct file
// (device + inode) once. Any directory is fine: pip wheels in venvs under /home, /tmp or
// /dev/shm are normal. Explicit copies (--nccl-lib / --cuda-lib) are added by path.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rscore/result.h"

namespace rs::rec {

enum class LibraryKind { kNccl, kCudart, kCuda };
std::string_view LibraryKindName(LibraryKind kind);  // 'nccl', 'cudart', 'cuda' (attachments.kind)

// By file name: libnccl.so[.N...], libcudart.so[.N...], libcuda.so[.N...]. Not libnccl-net.so,
// libcudart_static, libcudadebugger.
std::optional<LibraryKind> ClassifyLibrary(std::string_view path);

struct LibraryCopy {
  LibraryKind kind = LibraryKind::kNccl;
  std::string
      open_path;     // a path this process can open (through /proc/PID/root when found in a map)
  std::string path;  // the path as the mapping process sees it (or as given on the command line)
  int pid = 0;       // the process it was found in; 0 for explicit copies
  uint64_t dev = 0, ino = 0;
};

// The NCCL / CUDA library paths every process maps, read from <proc_root>/PID/maps. One
// reading is shared by every discovery that asks within kMaxAgeMs: the NCCL and the CUDA
// probes rescan in the same loop tick, so /proc is read once per rescan, not once per probe.
// The same reading notes the processes that map rankscope's NCCL profiler plugin region
// (recorder/plugin/gpu_ring.h), which the gpu probe then opens.
class ProcLibraryMaps {
 public:
  explicit ProcLibraryMaps(std::string proc_root, int64_t max_age_ms = kMaxAgeMs)
      : proc_root_(std::move(proc_root)), max_age_ms_(max_age_ms) {}

  struct Process {
    bool readable = false;           // false: exited, or a kernel thread we may not read
    std::optional<uint64_t> netns;   // network namespace inode
    std::vector<std::string> paths;  // absolute, not deleted, classified by ClassifyLibrary
    bool gpu_ring = false;           // maps /memfd:rankscope-gpu (the plugin's region)
  };
  // Every numeric entry of <proc_root>, and one process; read again when older than
  // max_age_ms, or (`fresh`) always: the process was just seen mapping a library.
  // `now_ms`: CLOCK_MONOTONIC milliseconds.
  const std::vector<int>& Pids(int64_t now_ms);
  const Process& Get(int pid, int64_t now_ms, bool fresh = false);
  const std::string& proc_root() const { return proc_root_; }
  uint64_t reads() const { return reads_; }  // maps files read (for tests)
  // When Pids last listed every process (CLOCK_MONOTONIC ms; -1: never).
  int64_t listed_at_ms() const { return pids_at_ms_; }
  // The processes whose latest reading maps the plugin's region, by pid; no file is read.
  std::vector<int> GpuRingPids() const;

  static constexpr int64_t kMaxAgeMs = 20;

 private:
  std::string proc_root_;
  int64_t max_age_ms_;
  std::vector<int> pids_;
  int64_t pids_at_ms_ = -1;
  std::map<int, std::pair<int64_t, Process>> processes_;  // pid -> (read at, what was read)
  uint64_t reads_ = 0;
};

class LibraryDiscovery {
 public:
  // `kinds`: which libraries this discovery looks for. `pids`: when non-empty, only these
  // processes are scanned. `scope_netns` != 0 (--scope netns): only processes in that network
  // namespace are scanned (the uprobes of a shared file still fire everywhere; the BPF side
  // filters by netns). `maps`: a reader shared with other discoveries (null: an own one).
  LibraryDiscovery(std::string proc_root, std::set<LibraryKind> kinds, std::vector<int> pids = {},
                   uint64_t scope_netns = 0, ProcLibraryMaps* maps = nullptr);

  // Copies not reported before, from every selected process.
  std::vector<LibraryCopy> Scan();
  // Copies not reported before, from one process (exec'd or newly traced); `fresh`: its maps
  // read now, not from the shared reading.
  std::vector<LibraryCopy> ScanPid(int pid, bool fresh = false);
  // An explicit copy (--nccl-lib PATH): its kind from the file name, else `fallback`.
  // Returns nullopt when the same file was reported before; an error when it cannot be read.
  rs::Result<std::optional<LibraryCopy>> AddExplicit(const std::string& path, LibraryKind fallback);

  size_t known_files() const { return seen_.size(); }

 private:
  void ScanInto(int pid, std::vector<LibraryCopy>& out, bool fresh = false);

  std::string proc_root_;
  std::set<LibraryKind> kinds_;
  std::vector<int> pids_;
  uint64_t scope_netns_;
  std::unique_ptr<ProcLibraryMaps> own_maps_;
  ProcLibraryMaps* maps_;
  std::set<std::pair<uint64_t, uint64_t>> seen_;  // (dev, inode) of reported files
};

}  // namespace rs::rec
