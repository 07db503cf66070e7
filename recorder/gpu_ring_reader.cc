#include "recorder/gpu_ring_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>

namespace rec {
namespace {

// What /proc/PID/fd/N reads for the plugin's memfd.
constexpr std::string_view kMemfdLink = "/memfd:" RS_GPU_RING_NAME;

bool IsRingLink(std::string_view link) {
  if (link.substr(0, kMemfdLink.size()) != kMemfdLink) return false;
  std::string_view rest = link.substr(kMemfdLink.size());
  return rest.empty() || rest == " (deleted)";
}

// The region is shared with other processes: its words change under us. Counters and stamps
// are read and written as atomics; the fields of a record are copied plainly and validated by
// its stamp (a sequence lock).
uint64_t LoadAcquire(const uint64_t& v) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(v)).load(std::memory_order_acquire);
}
int64_t LoadAcquire(const int64_t& v) {
  return std::atomic_ref<int64_t>(const_cast<int64_t&>(v)).load(std::memory_order_acquire);
}
uint64_t LoadRelaxed(const uint64_t& v) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(v)).load(std::memory_order_relaxed);
}

// A copy of `src` and whether it held still while copied (its stamp `stamp` before and after).
bool CopyStable(const rs_gpu_op& src, uint64_t stamp, rs_gpu_op& out) {
  std::memcpy(&out, &src, sizeof(out));
  std::atomic_thread_fence(std::memory_order_acquire);
  out.stamp = stamp;
  return LoadRelaxed(src.stamp) == stamp;
}

std::string ErrnoText(int err) { return std::strerror(err); }

}  // namespace

rs::Result<std::optional<GpuRingLocation>> FindGpuRing(const std::string& proc_root, int pid) {
  const std::string dir = proc_root + "/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (!d) {
    const int err = errno;
    if (err == ENOENT || err == ESRCH) return std::optional<GpuRingLocation>();  // gone
    return rs::Error("pid " + std::to_string(pid) + ": cannot list " + dir + ": " + ErrnoText(err) +
                     " (the recorder must run as root)");
  }
  std::optional<std::string> found;
  while (dirent* de = readdir(d)) {
    if (de->d_name[0] == '.') continue;
    const std::string path = dir + "/" + de->d_name;
    char buf[256];
    const ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
    if (n <= 0 || n == static_cast<ssize_t>(sizeof(buf))) continue;
    if (IsRingLink(std::string_view(buf, static_cast<size_t>(n)))) {
      found = path;
      break;
    }
  }
  closedir(d);
  if (!found) return std::optional<GpuRingLocation>();
  struct stat st;
  if (stat(found->c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) return std::optional<GpuRingLocation>();  // closed or exited meanwhile
    return rs::Error("pid " + std::to_string(pid) + ": cannot stat " + *found + ": " +
                     ErrnoText(err));
  }
  return std::optional<GpuRingLocation>(
      GpuRingLocation{*found, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)});
}

rs::Result<GpuRingReader> GpuRingReader::Open(const std::string& path) {
  GpuRingReader r;
  r.fd_ = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (r.fd_ < 0) {
    const int err = errno;
    return rs::Error(path + ": cannot open the GPU ring: " + ErrnoText(err) +
                     (err == EACCES || err == EPERM ? " (the recorder must run as root)" : ""));
  }
  struct stat st;
  if (fstat(r.fd_, &st) != 0)
    return rs::Error(path + ": cannot stat the GPU ring: " + ErrnoText(errno));
  if (st.st_size < RS_GPU_HEADER_BYTES) {
    return rs::Error(path + ": GPU ring of " + std::to_string(st.st_size) +
                     " bytes, shorter than its header (" + std::to_string(RS_GPU_HEADER_BYTES) +
                     "): not initialized yet, or not rankscope's plugin");
  }
  r.size_ = static_cast<size_t>(st.st_size);
  r.base_ = mmap(nullptr, r.size_, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd_, 0);
  if (r.base_ == MAP_FAILED) {
    r.base_ = nullptr;
    return rs::Error(path + ": cannot map the GPU ring: " + ErrnoText(errno));
  }
  r.header_ = static_cast<rs_gpu_ring_header*>(r.base_);
  const rs_gpu_ring_header& h = *r.header_;
  const uint64_t magic = LoadAcquire(h.magic);
  if (magic != RS_GPU_RING_MAGIC) {
    return rs::Error(path + ": not a rankscope GPU ring (magic " +
                     (magic == 0 ? std::string("0: not initialized yet") : "mismatch") + ")");
  }
  if (h.version != RS_GPU_RING_VERSION) {
    return rs::Error(path + ": GPU ring version " + std::to_string(h.version) +
                     ", this recorder reads version " + std::to_string(RS_GPU_RING_VERSION) +
                     " (use the plugin of the same rankscope release)");
  }
  if (h.header_bytes != RS_GPU_HEADER_BYTES || h.record_bytes != sizeof(rs_gpu_op)) {
    return rs::Error(path + ": GPU ring header of " + std::to_string(h.header_bytes) +
                     " bytes with records of " + std::to_string(h.record_bytes) + ", expected " +
                     std::to_string(RS_GPU_HEADER_BYTES) + " and " +
                     std::to_string(sizeof(rs_gpu_op)) + " (a plugin of another layout)");
  }
  const uint64_t need = RS_GPU_REGION_BYTES(h.slot_count, h.ring_records);
  if (h.slot_count == 0 || h.ring_records == 0 || need > r.size_) {
    return rs::Error(path + ": GPU ring of " + std::to_string(h.slot_count) + " slots and " +
                     std::to_string(h.ring_records) + " records does not fit its " +
                     std::to_string(r.size_) + " bytes");
  }
  const auto* ops =
      reinterpret_cast<const rs_gpu_op*>(static_cast<const char*>(r.base_) + RS_GPU_HEADER_BYTES);
  r.slots_ = ops;
  r.ring_ = ops + h.slot_count;
  // Where the first Read starts. A region some reader has read: at the head (the plugin
  // records only while a reader's heartbeat is fresh, and this one has not beaten yet, so
  // what the ring holds was recorded for an earlier reader, whose bundle has it). A region no
  // reader has read yet: at the beginning, the records of its startup window (gpu_ring.h);
  // the caller keeps those of its recording's window.
  r.from_start_ = LoadAcquire(h.reader_heartbeat_ns) == 0 && h.startup_until_ns != 0;
  r.tail_ = r.from_start_ ? 0 : LoadAcquire(h.head);
  return r;
}

GpuRingReader::GpuRingReader(GpuRingReader&& other) noexcept { *this = std::move(other); }

GpuRingReader& GpuRingReader::operator=(GpuRingReader&& other) noexcept {
  if (this == &other) return *this;
  Release();
  fd_ = std::exchange(other.fd_, -1);
  base_ = std::exchange(other.base_, nullptr);
  size_ = std::exchange(other.size_, 0);
  header_ = std::exchange(other.header_, nullptr);
  slots_ = std::exchange(other.slots_, nullptr);
  ring_ = std::exchange(other.ring_, nullptr);
  tail_ = std::exchange(other.tail_, 0);
  from_start_ = std::exchange(other.from_start_, false);
  overruns_ = std::exchange(other.overruns_, 0);
  return *this;
}

GpuRingReader::~GpuRingReader() { Release(); }

void GpuRingReader::Release() {
  if (base_) munmap(base_, size_);
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  base_ = nullptr;
  header_ = nullptr;
  slots_ = ring_ = nullptr;
}

// The reader's half of gpu_ring.h's ring protocol.
std::vector<rs_gpu_op> GpuRingReader::Read() {
  std::vector<rs_gpu_op> out;
  if (!header_) return out;
  const uint64_t n = header_->ring_records;
  const uint64_t head = LoadAcquire(header_->head);
  if (head > tail_ + n) {  // records older than the ring holds: lost to the wrap
    overruns_ += head - n - tail_;
    tail_ = head - n;
  }
  while (tail_ < head) {
    const rs_gpu_op& r = ring_[tail_ % n];
    const uint64_t s = LoadAcquire(r.stamp);
    if (s == 0 || s < tail_ + 1) break;  // still being written: read again at the next poll
    rs_gpu_op copy;
    if (s == tail_ + 1 && CopyStable(r, s, copy)) {
      out.push_back(copy);
    } else {
      ++overruns_;  // a later record took its place before (or while) it was read
    }
    ++tail_;
  }
  return out;
}

std::vector<rs_gpu_op> GpuRingReader::InFlight() const {
  std::vector<rs_gpu_op> out;
  if (!header_) return out;
  for (uint32_t i = 0; i < header_->slot_count; ++i) {
    const rs_gpu_op& slot = slots_[i];
    // A slot that changes while copied is tried once more; one still changing is left out
    // (its operation finished into the ring, or a new one is being filled in).
    for (int attempt = 0; attempt < 2; ++attempt) {
      const uint64_t s = LoadAcquire(slot.stamp);
      if (s == 0) break;
      rs_gpu_op copy;
      if (CopyStable(slot, s, copy)) {
        out.push_back(copy);
        break;
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const rs_gpu_op& a, const rs_gpu_op& b) {
    return a.enqueue_ns != b.enqueue_ns ? a.enqueue_ns < b.enqueue_ns : a.seq < b.seq;
  });
  return out;
}

void GpuRingReader::Heartbeat(int64_t now_ns) {
  if (!header_) return;
  std::atomic_ref<int64_t>(header_->reader_heartbeat_ns).store(now_ns, std::memory_order_release);
}

}  // namespace rec
