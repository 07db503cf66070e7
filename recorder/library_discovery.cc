#include "recorder/library_discovery.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "recorder/plugin/gpu_ring.h"
#include "recorder/process_table.h"
#include "recorder/symbolize.h"
#include "rscore/clock.h"

namespace rs::rec {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// "libX.so" exactly or followed by ".<version>".
bool IsSoName(std::string_view base, std::string_view stem) {
  if (!StartsWith(base, stem)) return false;
  std::string_view rest = base.substr(stem.size());
  return rest.empty() || rest[0] == '.';
}

bool IsPidDir(const char* name) {
  if (!*name) return false;
  for (const char* p = name; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
  }
  return true;
}

// How the plugin's memfd shows in a maps line: "/memfd:rankscope-gpu (deleted)".
constexpr std::string_view kGpuRingMapping = "/memfd:" RS_GPU_RING_NAME;
constexpr std::string_view kGpuRingMappingDeleted = "/memfd:" RS_GPU_RING_NAME " (deleted)";

}  // namespace

std::string_view LibraryKindName(LibraryKind kind) {
  switch (kind) {
    case LibraryKind::kNccl:
      return "nccl";
    case LibraryKind::kCudart:
      return "cudart";
    case LibraryKind::kCuda:
      return "cuda";
  }
  return "?";
}

std::optional<LibraryKind> ClassifyLibrary(std::string_view path) {
  if (path.ends_with(" (deleted)")) path.remove_suffix(10);
  size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (IsSoName(base, "libnccl.so")) return LibraryKind::kNccl;
  if (IsSoName(base, "libcudart.so")) return LibraryKind::kCudart;
  if (IsSoName(base, "libcuda.so")) return LibraryKind::kCuda;
  return std::nullopt;
}

const std::vector<int>& ProcLibraryMaps::Pids(int64_t now_ms) {
  if (pids_at_ms_ >= 0 && now_ms - pids_at_ms_ <= max_age_ms_) return pids_;
  pids_at_ms_ = now_ms;
  pids_.clear();
  if (DIR* dir = opendir(proc_root_.c_str())) {
    while (dirent* de = readdir(dir)) {
      if (IsPidDir(de->d_name)) pids_.push_back(std::atoi(de->d_name));
    }
    closedir(dir);
  }
  // Forget processes that are gone (their entries would only grow the cache).
  std::set<int> live(pids_.begin(), pids_.end());
  for (auto it = processes_.begin(); it != processes_.end();) {
    it = live.count(it->first) ? std::next(it) : processes_.erase(it);
  }
  return pids_;
}

const ProcLibraryMaps::Process& ProcLibraryMaps::Get(int pid, int64_t now_ms, bool fresh) {
  auto& [at_ms, p] = processes_[pid];
  if (!fresh && p.readable && now_ms - at_ms <= max_age_ms_) return p;
  at_ms = now_ms;
  p = Process{};
  ++reads_;
  std::ifstream in(proc_root_ + "/" + std::to_string(pid) + "/maps");
  if (!in) return p;
  p.readable = true;
  p.netns = ReadNetnsInode(proc_root_, pid);
  std::set<std::string> paths;
  std::string line;
  while (std::getline(in, line)) {
    // Cheap pre-filter: most processes map none of these libraries.
    if (line.find("libnccl") == std::string::npos && line.find("libcuda") == std::string::npos &&
        line.find(kGpuRingMapping) == std::string::npos) {
      continue;
    }
    for (const Mapping& m : ParseMaps(line)) {
      if (m.path == kGpuRingMapping || m.path == kGpuRingMappingDeleted) p.gpu_ring = true;
      if (m.path.empty() || m.path[0] != '/' || m.path.ends_with(" (deleted)")) continue;
      if (ClassifyLibrary(m.path)) paths.insert(m.path);
    }
  }
  p.paths.assign(paths.begin(), paths.end());
  return p;
}

std::vector<int> ProcLibraryMaps::GpuRingPids() const {
  std::vector<int> out;
  for (const auto& [pid, entry] : processes_) {
    if (entry.second.gpu_ring) out.push_back(pid);
  }
  return out;
}

LibraryDiscovery::LibraryDiscovery(std::string proc_root, std::set<LibraryKind> kinds,
                                   std::vector<int> pids, uint64_t scope_netns,
                                   ProcLibraryMaps* maps)
    : proc_root_(std::move(proc_root)),
      kinds_(std::move(kinds)),
      pids_(std::move(pids)),
      scope_netns_(scope_netns),
      own_maps_(maps ? nullptr : std::make_unique<ProcLibraryMaps>(proc_root_)),
      maps_(maps ? maps : own_maps_.get()) {}

void LibraryDiscovery::ScanInto(int pid, std::vector<LibraryCopy>& out, bool fresh) {
  const ProcLibraryMaps::Process& p = maps_->Get(pid, rs::MonotonicNowNs() / 1'000'000, fresh);
  if (!p.readable) return;
  if (scope_netns_ != 0 && p.netns != scope_netns_) return;
  for (const std::string& path : p.paths) {
    auto kind = ClassifyLibrary(path);
    if (!kind || !kinds_.count(*kind)) continue;
    std::string open_path = proc_root_ + "/" + std::to_string(pid) + "/root" + path;
    struct stat st;
    if (stat(open_path.c_str(), &st) != 0) continue;  // process gone meanwhile
    auto key = std::make_pair(static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino));
    if (!seen_.insert(key).second) continue;
    out.push_back({*kind, open_path, path, pid, key.first, key.second});
  }
}

std::vector<LibraryCopy> LibraryDiscovery::Scan() {
  std::vector<LibraryCopy> out;
  if (!pids_.empty()) {
    for (int pid : pids_) ScanInto(pid, out);
    return out;
  }
  for (int pid : maps_->Pids(rs::MonotonicNowNs() / 1'000'000)) ScanInto(pid, out);
  return out;
}

std::vector<LibraryCopy> LibraryDiscovery::ScanPid(int pid, bool fresh) {
  std::vector<LibraryCopy> out;
  ScanInto(pid, out, fresh);
  return out;
}

rs::Result<std::optional<LibraryCopy>> LibraryDiscovery::AddExplicit(const std::string& path,
                                                                     LibraryKind fallback) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return rs::Error(path + ": cannot read library: " + std::strerror(errno) +
                     " (check the --nccl-lib / --cuda-lib path)");
  }
  if (!S_ISREG(st.st_mode)) return rs::Error(path + ": not a regular file");
  auto key = std::make_pair(static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino));
  if (!seen_.insert(key).second) return std::optional<LibraryCopy>();
  LibraryKind kind = ClassifyLibrary(path).value_or(fallback);
  return std::optional<LibraryCopy>(LibraryCopy{kind, path, path, 0, key.first, key.second});
}

}  // namespace rs::rec
