#include "recorder/gpu_ring_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace rs::rec {
namespace {

// What /proc/PID/fd/N reads for the plugin's memfd.
constexpr std::string_view kMemfdLink = "/memfd:" RS_GPU_RING_NAME;

bool IsRingLink(std::string_view link) {
  if (link.substr(0, kMemfdLink.size()) != kMemfdLink) return false;
  std::string_view rest = link.substr(kMemfdLink.size());
  return rest.empty() || rest == " (deleted)";
}

std::string ErrnoText(int err) { return std::strerror(err); }

// A descriptor closed at the end of its scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Up to `limit` bytes of a /proc file opened at `dir` (no /proc file this reads is longer).
std::optional<std::string> ReadSmall(int dir, const char* name, size_t limit = 16384) {
  Fd fd(openat(dir, name, O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  std::string out(limit, '\0');
  size_t got = 0;
  while (got < limit) {
    const ssize_t n = read(fd.get(), out.data() + got, limit - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

// The number after "`key`:" at the start of a line of `text` (spaces and tabs skipped).
std::optional<uint64_t> FieldNumber(std::string_view text, std::string_view key) {
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line.substr(0, key.size()) != key || line.size() == key.size() || line[key.size()] != ':')
      continue;
    line.remove_prefix(key.size() + 1);
    while (!line.empty() && (line[0] == ' ' || line[0] == '\t')) line.remove_prefix(1);
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
    if (ec != std::errc() || p == line.data()) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

// The mount of one of this process's descriptors, from /proc/self/fdinfo.
std::optional<uint64_t> MountIdOf(int fd) {
  Fd self(open("/proc/self/fdinfo", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (self.get() < 0) return std::nullopt;
  auto info = ReadSmall(self.get(), std::to_string(fd).c_str());
  return info ? FieldNumber(*info, "mnt_id") : std::nullopt;
}

// The kernel's internal shared-memory mount, where memfd_create puts every file it makes
// (without MFD_HUGETLB): learned once from a memfd of our own.
std::optional<uint64_t> MemfdMountId() {
  static const std::optional<uint64_t> id = [] {
    Fd fd(memfd_create("rankscope-mount-probe", MFD_CLOEXEC));
    return fd.get() < 0 ? std::nullopt : MountIdOf(fd.get());
  }();
  return id;
}

bool Gone(int err) { return err == ENOENT || err == ESRCH; }

}  // namespace

rs::Result<std::optional<GpuRingLocation>> FindGpuRing(const std::string& proc_root, int pid,
                                                       const std::set<int>& skip_fds) {
  const std::string dir = proc_root + "/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (!d) {
    const int err = errno;
    if (Gone(err)) return std::optional<GpuRingLocation>();  // gone
    return rs::Error("pid " + std::to_string(pid) + ": cannot list " + dir + ": " + ErrnoText(err) +
                     " (the recorder must run as root)");
  }
  std::optional<GpuRingLocation> found;
  while (dirent* de = readdir(d)) {
    if (de->d_name[0] == '.' || skip_fds.count(std::atoi(de->d_name))) continue;
    const std::string path = dir + "/" + de->d_name;
    char buf[256];
    const ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
    if (n <= 0 || n == static_cast<ssize_t>(sizeof(buf))) continue;
    if (IsRingLink(std::string_view(buf, static_cast<size_t>(n)))) {
      found = GpuRingLocation{path};
      break;
    }
  }
  closedir(d);
  return found;
}

std::optional<std::array<uint32_t, 4>> ParseStatusUids(std::string_view status) {
  const size_t at = status.find("\nUid:");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = status.substr(at + 5);
  rest = rest.substr(0, rest.find('\n'));
  std::array<uint32_t, 4> uids{};
  for (uint32_t& uid : uids) {
    while (!rest.empty() && (rest[0] == ' ' || rest[0] == '\t')) rest.remove_prefix(1);
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), uid);
    if (ec != std::errc() || p == rest.data()) return std::nullopt;
    rest.remove_prefix(static_cast<size_t>(p - rest.data()));
  }
  return uids;
}

rs::Result<GpuRingReader> GpuRingReader::Open(const std::string& path,
                                              std::optional<GpuRegionFault>* fault) {
  auto refuse = [&](GpuRegionFault f, const std::string& why) {
    if (fault) *fault = f;
    return rs::Error(path + ": " + why);
  };
  auto failed = [&path](const std::string& what, int err) {
    return rs::Error(path + ": cannot " + what + ": " + ErrnoText(err) +
                     (err == EACCES || err == EPERM ? " (the recorder must run as root)" : ""));
  };
  const size_t cut = path.rfind("/fd/");
  const std::string fd_name = cut == std::string::npos ? "" : path.substr(cut + 4);
  if (fd_name.empty() || fd_name.find_first_not_of("0123456789") != std::string::npos) {
    return rs::Error(path + ": not a /proc/PID/fd/N path");
  }
  Fd proc(open(path.substr(0, cut).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (proc.get() < 0) return failed("open its process's directory", errno);

  // 1. What the descriptor refers to, before anything opens it.
  Fd where(openat(proc.get(), ("fd/" + fd_name).c_str(), O_PATH | O_CLOEXEC));
  if (where.get() < 0) return failed("open the GPU ring", errno);
  const std::optional<uint64_t> shm = MemfdMountId(), mount = MountIdOf(where.get());
  if (!shm || !mount) {
    return failed("read the GPU ring's mount from /proc/self/fdinfo", errno ? errno : ENOENT);
  }
  if (*mount != *shm) {
    return refuse(GpuRegionFault::kNotSealed,
                  "not rankscope's GPU ring: a file named like it that is not a memory file "
                  "(memfd) of the kernel's shared memory; not read");
  }
  Fd fd(open(("/proc/self/fd/" + std::to_string(where.get())).c_str(),
             O_RDWR | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) return failed("open the GPU ring", errno);

  // 2. Sealed against shrinking, then its size (which can only grow from here on).
  const int seals = fcntl(fd.get(), F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return refuse(GpuRegionFault::kNotSealed,
                  "GPU ring not sealed against shrinking (F_SEAL_SHRINK), so it could be "
                  "truncated while mapped: not read (a plugin older than this recorder, or not "
                  "rankscope's: use the plugin of the same rankscope release)");
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return failed("stat the GPU ring", errno);

  // 3. Its owner is the user of the process holding it.
  auto status = ReadSmall(proc.get(), "status");
  if (!status) return failed("read its process's status", errno ? errno : ENOENT);
  const auto uids = ParseStatusUids(*status);
  if (!uids) return rs::Error(path + ": its process's status has no Uid line");
  if (std::any_of(uids->begin(), uids->end(), [&](uint32_t u) { return u != st.st_uid; })) {
    return refuse(GpuRegionFault::kOwner,
                  "GPU ring owned by uid " + std::to_string(st.st_uid) +
                      ", held by a process of uid " + std::to_string((*uids)[0]) + "/" +
                      std::to_string((*uids)[1]) + "/" + std::to_string((*uids)[2]) + "/" +
                      std::to_string((*uids)[3]) +
                      " (real/effective/saved/filesystem): a region made by another user than "
                      "the process's; not read");
  }

  // 4. Mapped: what exists, at most the largest region of this release.
  if (!S_ISREG(st.st_mode) || st.st_size < RS_GPU_HEADER_BYTES) {
    return refuse(GpuRegionFault::kLayout, "GPU ring of " + std::to_string(st.st_size) +
                                               " bytes, shorter than its header (" +
                                               std::to_string(RS_GPU_HEADER_BYTES) +
                                               "): not initialized yet, or not rankscope's plugin");
  }
  GpuRingReader r;
  r.size_ = static_cast<size_t>(std::min<uint64_t>(st.st_size, kGpuRegionMaxBytes));
  r.base_ = mmap(nullptr, r.size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (r.base_ == MAP_FAILED) {
    r.base_ = nullptr;
    return failed("map the GPU ring", errno);
  }
  r.fd_ = fd.release();
  r.dev_ = static_cast<uint64_t>(st.st_dev);
  r.ino_ = static_cast<uint64_t>(st.st_ino);
  auto view = GpuRingView::Attach(r.base_, r.size_);
  if (!view.ok()) return refuse(GpuRegionFault::kLayout, view.error().message());
  r.view_ = std::move(view).value();
  return r;
}

GpuRingReader::GpuRingReader(GpuRingReader&& other) noexcept { *this = std::move(other); }

GpuRingReader& GpuRingReader::operator=(GpuRingReader&& other) noexcept {
  if (this == &other) return *this;
  Release();
  fd_ = std::exchange(other.fd_, -1);
  base_ = std::exchange(other.base_, nullptr);
  size_ = std::exchange(other.size_, 0);
  dev_ = std::exchange(other.dev_, 0);
  ino_ = std::exchange(other.ino_, 0);
  view_ = std::exchange(other.view_, GpuRingView());
  return *this;
}

GpuRingReader::~GpuRingReader() { Release(); }

void GpuRingReader::Release() {
  if (base_) munmap(base_, size_);
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  base_ = nullptr;
  view_ = GpuRingView();
}

}  // namespace rs::rec
