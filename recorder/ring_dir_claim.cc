#include "recorder/ring_dir_claim.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "recorder/log.h"
#include "rscore/clock.h"
#include "rscore/unique_fd.h"

namespace rs::rec {
namespace {

using rs::UniqueFd;

// The claim of this process: the pid file's descriptor carries its lock (closing any
// descriptor of the file would drop it, so there is exactly one).
int g_claim_fd = -1;

// pidfd_open(2) and pidfd_send_signal(2) (Linux 5.3, 5.1) by their system calls: the
// declarations in bookworm's glibc 2.36 <sys/pidfd.h> lack C linkage for C++.
int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }
int PidfdSignal(int pidfd, int sig) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

// The process holding a write lock on `fd`'s file, if any (the kernel's answer, not the
// file's).
std::optional<pid_t> LockHolder(int fd) {
  struct flock q {};
  q.l_type = F_WRLCK;
  q.l_whence = SEEK_SET;
  if (fcntl(fd, F_GETLK, &q) != 0 || q.l_type == F_UNLCK) return std::nullopt;
  return q.l_pid;
}

std::string ReadSmall(int fd) {
  char buf[128];
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

std::optional<uint64_t> ProcessStartTime(pid_t pid, const std::string& proc_root) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');  // the command name may hold spaces and ')'
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {  // field 3 (state) is the first after the name
    if (!(fields >> field)) return std::nullopt;
  }
  char* end = nullptr;
  const unsigned long long v = std::strtoull(field.c_str(), &end, 10);
  if (end == field.c_str() || *end != '\0') return std::nullopt;
  return v;
}

std::string PidFilePath(const std::string& ring_dir) { return ring_dir + "/recorder.pid"; }
std::string CutLogPath(const std::string& ring_dir) { return ring_dir + "/cuts.log"; }

rs::Result<void> ClaimRingDir(const std::string& ring_dir) {
  const std::string path = PidFilePath(ring_dir);
  if (g_claim_fd >= 0) return rs::Error(path + ": this process has claimed a ring directory");
  UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
  struct stat st {};
  if (!fd.ok() || fstat(fd.get(), &st) != 0) {
    return rs::Error(path + ": cannot open: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
    return rs::Error(path + ": not a pid file a recorder made (" +
                     (S_ISREG(st.st_mode) ? std::to_string(st.st_nlink) + " links"
                                          : std::string("not a regular file")) +
                     "); remove it");
  }
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  if (fcntl(fd.get(), F_SETLK, &lock) != 0) {
    if (errno != EACCES && errno != EAGAIN) {
      return rs::Error(path + ": cannot lock: " + std::strerror(errno));
    }
    const auto holder = LockHolder(fd.get());
    return rs::Error(ring_dir + ": recorder " + (holder ? std::to_string(*holder) : "?") +
                     " records into this ring directory (" + path +
                     "); stop it or give another --ring-dir");
  }
  const std::string text = std::to_string(getpid()) + " " +
                           std::to_string(ProcessStartTime(getpid()).value_or(0)) + "\n";
  if (ftruncate(fd.get(), 0) != 0 ||
      pwrite(fd.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return rs::Error(path + ": cannot write: " + std::strerror(errno));
  }
  g_claim_fd = fd.release();
  return rs::Ok();
}

void ReleaseRingDir(const std::string& ring_dir) {
  if (g_claim_fd < 0) return;
  unlink(PidFilePath(ring_dir).c_str());
  close(g_claim_fd);
  g_claim_fd = -1;
}

void AppendCutLog(const std::string& ring_dir, const std::string& line) {
  const std::string path = CutLogPath(ring_dir);
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
  const std::string text = line + "\n";
  // `rankscope-record cut` waits for this line: without it, it says it timed out.
  if (!fd.ok() || write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    Log("%s: cannot append the cut's line: %s", path.c_str(), std::strerror(errno));
  }
}

rs::Result<std::string> RequestCut(const std::string& ring_dir, int64_t timeout_ns) {
  const std::string pid_path = PidFilePath(ring_dir);
  const std::string not_running = " (is `rankscope-record --ring` running with this --ring-dir?)";
  UniqueFd fd(open(pid_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.ok()) return rs::Error(pid_path + ": no recorder pid" + not_running);
  std::istringstream text(ReadSmall(fd.get()));
  long long file_pid = 0;
  unsigned long long file_start = 0;
  text >> file_pid >> file_start;
  // Believed only while a recorder holds its lock: the pid of a file left behind may belong
  // to any process by now.
  const auto holder = LockHolder(fd.get());
  if (!holder) {
    return rs::Error(pid_path + " names pid " + std::to_string(file_pid) +
                     ", but no recorder holds it (left by a recorder that ended): nothing "
                     "signalled" +
                     not_running);
  }
  const pid_t pid = *holder;
  if (pid != file_pid || (file_start != 0 && ProcessStartTime(pid) != file_start)) {
    return rs::Error(pid_path + ": held by process " + std::to_string(pid) +
                     ", which is not the recorder it names (pid " + std::to_string(file_pid) +
                     "): nothing signalled");
  }
  // A pidfd names this very process: it cannot be reused for another between the check and
  // the signal. The lock is checked once more after it was opened.
  UniqueFd pidfd(PidfdOpen(pid));
  if (!pidfd.ok() || LockHolder(fd.get()) != pid) {
    return rs::Error("recorder " + std::to_string(pid) + " (from " + pid_path + ") has ended" +
                     not_running);
  }
  struct stat st {};
  const off_t log_size = stat(CutLogPath(ring_dir).c_str(), &st) == 0 ? st.st_size : 0;
  if (PidfdSignal(pidfd.get(), SIGUSR1) != 0) {
    return rs::Error("recorder " + std::to_string(pid) + " (from " + pid_path +
                     "): " + std::strerror(errno));
  }
  const int64_t deadline = rs::MonotonicNowNs() + timeout_ns;
  while (rs::MonotonicNowNs() < deadline) {
    UniqueFd log(open(CutLogPath(ring_dir).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (log.ok() && fstat(log.get(), &st) == 0 && st.st_size > log_size) {
      std::string line(static_cast<size_t>(std::min<off_t>(st.st_size - log_size, 65536)), '\0');
      const ssize_t n = pread(log.get(), line.data(), line.size(), log_size);
      line.resize(n > 0 ? static_cast<size_t>(n) : 0);
      if (const size_t nl = line.find('\n'); nl != std::string::npos && nl > 0) {
        line.resize(nl);
        if (line.rfind("error: ", 0) == 0) {
          return rs::Error("recorder " + std::to_string(pid) + ": " + line.substr(7));
        }
        return line;
      }
    }
    pollfd p{pidfd.get(), POLLIN, 0};  // readable once the process has ended
    if (poll(&p, 1, 50) > 0) {
      return rs::Error("recorder " + std::to_string(pid) + " exited before writing the cut");
    }
  }
  return rs::Error("no cut written by recorder " + std::to_string(pid) + " within --timeout");
}

}  // namespace rs::rec
