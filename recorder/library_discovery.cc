#include "recorder/library_discovery.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "recorder/process_table.h"
#include "recorder/symbolize.h"

namespace rec {
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

LibraryDiscovery::LibraryDiscovery(std::string proc_root, std::set<LibraryKind> kinds,
                                   std::vector<int> pids, uint64_t scope_netns)
    : proc_root_(std::move(proc_root)),
      kinds_(std::move(kinds)),
      pids_(std::move(pids)),
      scope_netns_(scope_netns) {}

void LibraryDiscovery::ScanInto(int pid, std::vector<LibraryCopy>& out) {
  // Cheap pre-filter: most processes map none of these libraries.
  std::ifstream in(proc_root_ + "/" + std::to_string(pid) + "/maps");
  if (!in) return;  // exited, or a kernel thread we may not read
  std::string line;
  std::set<std::string> paths;
  if (scope_netns_ != 0 && ReadNetnsInode(proc_root_, pid) != scope_netns_) return;
  while (std::getline(in, line)) {
    if (line.find("libnccl") == std::string::npos && line.find("libcuda") == std::string::npos) {
      continue;
    }
    for (const Mapping& m : ParseMaps(line)) {
      if (m.path.empty() || m.path[0] != '/' || m.path.ends_with(" (deleted)")) continue;
      auto kind = ClassifyLibrary(m.path);
      if (kind && kinds_.count(*kind)) paths.insert(m.path);
    }
  }
  for (const std::string& path : paths) {
    std::string open_path = proc_root_ + "/" + std::to_string(pid) + "/root" + path;
    struct stat st;
    if (stat(open_path.c_str(), &st) != 0) continue;  // process gone meanwhile
    auto key = std::make_pair(static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino));
    if (!seen_.insert(key).second) continue;
    out.push_back({*ClassifyLibrary(path), open_path, path, pid, key.first, key.second});
  }
}

std::vector<LibraryCopy> LibraryDiscovery::Scan() {
  std::vector<LibraryCopy> out;
  if (!pids_.empty()) {
    for (int pid : pids_) ScanInto(pid, out);
    return out;
  }
  DIR* dir = opendir(proc_root_.c_str());
  if (!dir) return out;
  while (dirent* de = readdir(dir)) {
    if (IsPidDir(de->d_name)) ScanInto(std::atoi(de->d_name), out);
  }
  closedir(dir);
  return out;
}

std::vector<LibraryCopy> LibraryDiscovery::ScanPid(int pid) {
  std::vector<LibraryCopy> out;
  ScanInto(pid, out);
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

}  // namespace rec
