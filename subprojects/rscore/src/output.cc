#include "rscore/output.h"
#include "rscore/path.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

namespace rs {
namespace {

std::atomic<bool> g_force_named{false};

std::string Errno(int e) { return std::strerror(e); }

const char* ProgramName() {
  return program_invocation_short_name && *program_invocation_short_name
             ? program_invocation_short_name
             : "rankscope";
}

// --- The signal cleanup -------------------------------------------------------------------

constexpr int kSlots = 64;
enum SlotState : int { kFree = 0, kFilling = 1, kArmed = 2 };
struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
Slot g_slots[kSlots];
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

void OnSignal(int sig) {
  const int saved = errno;
  for (Slot& s : g_slots) {
    if (s.state.load() == kArmed) unlink(s.path);
  }
  // The default action once the handler returns: the signal, blocked while it runs, is
  // delivered again and ends the process as it would have without the handler.
  signal(sig, SIG_DFL);
  raise(sig);
  errno = saved;
}

void InstallSignalCleanup() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : kCleanupSignals) {
      struct sigaction old {};
      if (sigaction(sig, nullptr, &old) != 0) continue;
      // A signal the caller ignores (nohup, a shell's background job) stays ignored.
      if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue;
      struct sigaction sa {};
      sa.sa_handler = OnSignal;
      sigemptyset(&sa.sa_mask);
      for (int other : kCleanupSignals) sigaddset(&sa.sa_mask, other);
      sa.sa_flags = SA_RESTART;
      sigaction(sig, &sa, nullptr);
    }
  });
}

// --- Paths SQLite can open: /proc/self/fd/N ---------------------------------------------

constexpr char kFdPrefix[] = "/proc/self/fd/";

bool IsFdPath(const char* path) {
  return path && std::strncmp(path, kFdPrefix, sizeof kFdPrefix - 1) == 0;
}

sqlite3_vfs* g_unix_vfs = nullptr;
sqlite3_vfs g_fd_vfs;

// SQLite resolves symbolic links in a database's path and opens it with O_NOFOLLOW; both
// would turn /proc/self/fd/N (a link to an unnamed or unlinked file) into a name that does not
// exist. Such paths are kept as they are and opened following the link; every other path is
// SQLite's own business.
int FdFullPathname(sqlite3_vfs*, const char* name, int size, char* out) {
  if (IsFdPath(name)) {
    const size_t len = std::strlen(name);
    if (static_cast<int>(len) + 1 > size) return SQLITE_CANTOPEN;
    std::memcpy(out, name, len + 1);
    return SQLITE_OK;
  }
  return g_unix_vfs->xFullPathname(g_unix_vfs, name, size, out);
}

int FdOpen(const char* path, int flags, int mode) {
  if (IsFdPath(path)) flags &= ~O_NOFOLLOW;
  return open(path, flags, static_cast<mode_t>(mode));
}

// Installed before the first connection, and again whenever SQLite's own VFS is the default
// again: sqlite3_shutdown() followed by a new initialization registers it as the default anew
// (the memory-budget test shuts SQLite down to choose its allocator, and every later test that
// opened an unnamed file failed on the link it no longer kept).
void InstallSqliteFdPaths() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  // By name, not by address: a process can hold two copies of this code (the recorder and its
  // serve module each link rscore), and the one installed first serves both; a copy that
  // installed itself over the other would make each call the other's without end.
  constexpr const char* kName = "rankscope-unix";
  sqlite3_vfs* base = sqlite3_vfs_find(nullptr);
  if (!base || (base->zName && std::strcmp(base->zName, kName) == 0)) return;
  if (base->iVersion < 3 || !base->xSetSystemCall) return;
  if (sqlite3_vfs_find(kName) == &g_fd_vfs) {
    sqlite3_vfs_unregister(&g_fd_vfs);  // still listed: unlinked before it is copied over
  }
  g_unix_vfs = base;
  g_fd_vfs = *base;
  g_fd_vfs.zName = kName;
  g_fd_vfs.xFullPathname = FdFullPathname;
  if (base->xSetSystemCall(base, "open", reinterpret_cast<sqlite3_syscall_ptr>(&FdOpen)) !=
      SQLITE_OK) {
    return;
  }
  sqlite3_vfs_register(&g_fd_vfs, /*makeDflt=*/1);
}

bool ProcFdUsable() {
  static const bool usable = access("/proc/self/fd", X_OK) == 0;
  return usable;
}

std::string FdPath(int fd) {
  InstallSqliteFdPaths();
  return kFdPrefix + std::to_string(fd);
}

}  // namespace

void UseFdPathsInSqlite() { InstallSqliteFdPaths(); }

namespace {

// O_TMPFILE is not supported by this file system (or kernel).
bool NoUnnamedFiles(int e) { return e == EOPNOTSUPP || e == EISDIR || e == EINVAL; }

constexpr char kTempMarker[] = ".tmp-rankscope-";

// DIR/.STEM.tmp-rankscope-PID-XXXXXX, for mkstemp.
std::string TempTemplate(const std::string& dir, const std::string& stem) {
  return dir + "/." + stem + kTempMarker + std::to_string(getpid()) + "-XXXXXX";
}

// A fresh name of the same shape (for a link, which mkstemp cannot make).
std::string TempName(const std::string& dir, const std::string& stem) {
  static std::atomic<unsigned> counter{0};
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  unsigned x = static_cast<unsigned>(ts.tv_nsec) ^ (counter.fetch_add(1) * 2654435761u);
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string name = TempTemplate(dir, stem);
  for (size_t i = name.size() - 6; i < name.size(); ++i) {
    name[i] = kChars[x % 62];
    x = x / 62 + static_cast<unsigned>(i) * 7919u;
  }
  return name;
}

// The pid in NAME when it is a temporary of this scheme, else 0.
pid_t TempOwner(const char* name) {
  if (name[0] != '.') return 0;
  const char* m = std::strstr(name, kTempMarker);
  if (!m) return 0;
  const char* p = m + sizeof kTempMarker - 1;
  char* end = nullptr;
  const long pid = std::strtol(p, &end, 10);
  if (end == p || pid <= 0 || *end != '-' || std::strlen(end + 1) != 6) return 0;
  return static_cast<pid_t>(pid);
}

// Removes this scheme's temporaries in `dir` whose process is gone (a run killed with
// SIGKILL, or one that lost power): owned by this user and untouched for a minute, so that a
// live run of another pid namespace sharing the directory keeps its own.
void RemoveStaleTemporaries(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  const time_t now = time(nullptr);
  while (dirent* e = readdir(d)) {
    const pid_t pid = TempOwner(e->d_name);
    if (pid == 0 || pid == getpid()) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;
    const std::string path = dir + "/" + e->d_name;
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) continue;
    if (now - st.st_mtime < 60) continue;
    if (unlink(path.c_str()) == 0) {
      std::fprintf(stderr, "%s: removed %s, left by an interrupted run (process %d)\n",
                   ProgramName(), path.c_str(), static_cast<int>(pid));
    }
  }
  closedir(d);
}

struct FileKey {
  dev_t dev;
  ino_t ino;
  std::string name;
};

// The files behind `inputs` (a directory: the files directly inside it), by device and inode.
std::vector<FileKey> InputFiles(const std::vector<std::string>& inputs,
                                std::vector<struct stat>* stats) {
  std::vector<FileKey> keys;
  for (const std::string& in : inputs) {
    struct stat st {};
    if (stat(in.c_str(), &st) != 0) continue;  // the tool says what is wrong with it
    if (!S_ISDIR(st.st_mode)) {
      keys.push_back({st.st_dev, st.st_ino, in});
      if (S_ISREG(st.st_mode)) stats->push_back(st);
      continue;
    }
    DIR* d = opendir(in.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) {
        continue;
      }
      const std::string path = in + (in.back() == '/' ? "" : "/") + e->d_name;
      struct stat fst {};
      if (stat(path.c_str(), &fst) != 0 || !S_ISREG(fst.st_mode)) continue;
      keys.push_back({fst.st_dev, fst.st_ino, path});
      stats->push_back(fst);
    }
    closedir(d);
  }
  return keys;
}

mode_t Umask() {
  static const mode_t mask = [] {
    const mode_t m = umask(022);
    umask(m);
    return m;
  }();
  return mask;
}

}  // namespace

std::string OutputTarget::shown() const { return kind == Kind::kStdout ? "standard output" : path; }

Result<OutputTarget> CheckOutput(const std::string& path, bool force,
                                 const std::vector<std::string>& inputs, mode_t max_mode) {
  OutputTarget t;
  t.path = path;
  t.force = force;
  if (path.empty()) return Error("-o: an output path is required");
  std::vector<struct stat> input_stats;
  const std::vector<FileKey> keys = InputFiles(inputs, &input_stats);
  auto input_at = [&](const struct stat& st) -> const FileKey* {
    for (const FileKey& k : keys) {
      if (k.dev == st.st_dev && k.ino == st.st_ino) return &k;
    }
    return nullptr;
  };
  if (path == "-") {
    t.kind = OutputTarget::Kind::kStdout;
    struct stat so {};
    if (fstat(STDOUT_FILENO, &so) == 0 && S_ISREG(so.st_mode)) {
      if (const FileKey* k = input_at(so)) {
        return Error("-o -: standard output is the input " + k->name +
                     "; writing it would destroy the input (redirect it elsewhere)");
      }
    }
    return t;
  }
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (const FileKey* k = input_at(st)) {
      return Error("-o " + path + ": is the input " + k->name +
                   (k->name == path ? "" : " (the same file)") +
                   "; writing it would destroy the input (write elsewhere)");
    }
    if (S_ISDIR(st.st_mode)) {
      return Error("-o " + path + ": is a directory; give a file name in it");
    }
    if (!S_ISREG(st.st_mode)) {
      t.kind = OutputTarget::Kind::kStream;  // /dev/null, a FIFO: written to, never replaced
      return t;
    }
  }
  struct stat lst {};
  if (lstat(path.c_str(), &lst) == 0 && !force) {
    return Error("-o " + path + ": exists; give --force to replace it");
  }
  const std::string dir = DirOf(path);
  struct stat dst {};
  if (stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
    return Error("-o " + path + ": directory '" + dir + "' does not exist");
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return Error("-o " + path + ": directory '" + dir + "' is not writable");
  }
  mode_t others = 0066;
  for (const struct stat& s : input_stats) others &= s.st_mode;
  t.mode = (0600 | others) & max_mode & ~Umask() & 0666;
  return t;
}

// --- OutputFile ---------------------------------------------------------------------------

Result<OutputFile> OutputFile::Create(const OutputTarget& target) {
  OutputFile f;
  f.target_ = target;
  if (target.kind != OutputTarget::Kind::kFile) {
    ASSIGN_OR_RETURN(ScratchFile s, CreateScratchFile(TempDir(), "rankscope-output"));
    f.fd_ = s.fd;
    f.path_ = std::move(s.path);
    f.named_ = std::move(s.named);
    f.cleanup_slot_ = s.cleanup_slot;
    f.dir_ = TempDir();
    return f;
  }
  f.dir_ = DirOf(target.path);
  InstallSignalCleanup();
  RemoveStaleTemporaries(f.dir_);
  if (!g_force_named.load() && ProcFdUsable()) {
    f.fd_ = open(f.dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (f.fd_ >= 0) {
      f.path_ = FdPath(f.fd_);
      return f;
    }
    if (!NoUnnamedFiles(errno)) {
      return ErrnoError(target.path + ": cannot create a file in " + f.dir_, errno);
    }
  }
  std::string name = TempTemplate(f.dir_, BaseOf(target.path));
  f.fd_ = mkostemp(name.data(), O_CLOEXEC);
  if (f.fd_ < 0) {
    return ErrnoError(target.path + ": cannot create a file in " + f.dir_, errno);
  }
  f.cleanup_slot_ = AddSignalCleanup(name);
  f.named_ = name;
  f.path_ = name;
  return f;
}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : target_(std::move(o.target_)),
      fd_(std::exchange(o.fd_, -1)),
      path_(std::move(o.path_)),
      dir_(std::move(o.dir_)),
      named_(std::exchange(o.named_, {})),
      cleanup_slot_(std::exchange(o.cleanup_slot_, -1)) {}

OutputFile& OutputFile::operator=(OutputFile&& o) noexcept {
  if (this != &o) {
    Discard();
    target_ = std::move(o.target_);
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
    dir_ = std::move(o.dir_);
    named_ = std::exchange(o.named_, {});
    cleanup_slot_ = std::exchange(o.cleanup_slot_, -1);
  }
  return *this;
}

OutputFile::~OutputFile() { Discard(); }

void OutputFile::Discard() {
  if (!named_.empty()) unlink(named_.c_str());
  named_.clear();
  RemoveSignalCleanup(cleanup_slot_);
  cleanup_slot_ = -1;
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

Result<void> OutputFile::Write(const void* data, size_t size) {
  if (fd_ < 0) return Error(shown() + ": written after it was complete");
  const std::string name = target_.kind == OutputTarget::Kind::kFile
                               ? target_.path
                               : "the copy of " + shown() + " in " + dir_;
  return WriteAllTo(fd_, data, size, name);
}

Result<void> OutputFile::Commit() {
  if (fd_ < 0) return Error(shown() + ": already written");
  if (target_.kind != OutputTarget::Kind::kFile) {
    int out = STDOUT_FILENO;
    if (target_.kind == OutputTarget::Kind::kStream) {
      out = open(target_.path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
      if (out < 0) return ErrnoError("cannot open " + target_.path, errno);
    }
    char buf[1 << 16];
    Result<void> r = Ok();
    for (off_t off = 0;;) {
      const ssize_t n = pread(fd_, buf, sizeof buf, off);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        r = ErrnoError("cannot read the copy of " + shown() + " in " + dir_, errno);
        break;
      }
      if (n == 0) break;
      r = WriteAllTo(out, buf, static_cast<size_t>(n), shown());
      if (!r.ok()) break;
      off += n;
    }
    if (out != STDOUT_FILENO && close(out) != 0 && r.ok()) r = WriteError(shown(), errno);
    Discard();
    return r;
  }
  const std::string& to = target_.path;
  if (fchmod(fd_, target_.mode) != 0) {
    return ErrnoError(to + ": cannot set its mode", errno);
  }
  if (!named_.empty()) {
    // A temporary with a name: linked (no file may appear under the name meanwhile) or, with
    // force, renamed over the old file.
    if (!target_.force) {
      if (link(named_.c_str(), to.c_str()) != 0) {
        const int e = errno;
        if (e == EEXIST) {
          return Error("-o " + to +
                       ": a file of that name appeared meanwhile; nothing replaced "
                       "(--force replaces it)");
        }
        struct stat st {};
        if ((e != EPERM && e != EOPNOTSUPP) || lstat(to.c_str(), &st) == 0 ||
            rename(named_.c_str(), to.c_str()) != 0) {
          return ErrnoError(to + ": cannot move the finished file into place", e);
        }
      }
    } else if (rename(named_.c_str(), to.c_str()) != 0) {
      return ErrnoError(to + ": cannot move the finished file into place", errno);
    }
    Discard();  // unlinks the temporary's name where it is still there (after link)
    return Ok();
  }
  // An unnamed file: linked straight to the name, or, to replace a file, to a temporary name
  // renamed over it.
  if (!target_.force) {
    if (linkat(AT_FDCWD, path_.c_str(), AT_FDCWD, to.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      const int e = errno;
      if (e == EEXIST) {
        return Error("-o " + to +
                     ": a file of that name appeared meanwhile; nothing replaced "
                     "(--force replaces it)");
      }
      if (e == ENOSPC || e == EDQUOT) return WriteError(to, e);
      return ErrnoError(to + ": cannot move the finished file into place", e);
    }
    Discard();
    return Ok();
  }
  for (int attempt = 0;; ++attempt) {
    const std::string name = TempName(dir_, BaseOf(to));
    if (linkat(AT_FDCWD, path_.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      if (errno == EEXIST && attempt < 100) continue;
      if (errno == ENOSPC || errno == EDQUOT) return WriteError(to, errno);
      return ErrnoError(to + ": cannot move the finished file into place", errno);
    }
    const int slot = AddSignalCleanup(name);
    const int rc = rename(name.c_str(), to.c_str());
    const int e = errno;
    if (rc != 0) unlink(name.c_str());
    RemoveSignalCleanup(slot);
    if (rc != 0) return ErrnoError(to + ": cannot move the finished file into place", e);
    break;
  }
  Discard();
  return Ok();
}

// --- Scratch files ------------------------------------------------------------------------

Result<ScratchFile> CreateScratchFile(const std::string& dir, const std::string& stem) {
  ScratchFile f;
  auto fail = [&](int e) {
    return Error(dir + ": cannot create a temporary file: " + Errno(e) +
                     (dir == TempDir() ? " (set TMPDIR to a writable directory)" : ""),
                 ErrnoKind(e));
  };
  if (ProcFdUsable()) {
    f.fd = g_force_named.load() ? -1 : open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (f.fd < 0) {
      if (!g_force_named.load() && !NoUnnamedFiles(errno)) return fail(errno);
      std::string name = TempTemplate(dir, stem);
      f.fd = mkostemp(name.data(), O_CLOEXEC);
      if (f.fd < 0) return fail(errno);
      unlink(name.c_str());
    }
    f.path = FdPath(f.fd);
    return f;
  }
  InstallSignalCleanup();
  RemoveStaleTemporaries(dir);
  std::string name = TempTemplate(dir, stem);
  f.fd = mkostemp(name.data(), O_CLOEXEC);
  if (f.fd < 0) return fail(errno);
  f.cleanup_slot = AddSignalCleanup(name);
  f.named = name;
  f.path = name;
  return f;
}

void ReleaseScratchFile(ScratchFile& f) {
  if (!f.named.empty()) {
    unlink(f.named.c_str());
    for (const char* suffix : {"-wal", "-shm", "-journal"}) unlink((f.named + suffix).c_str());
  }
  RemoveSignalCleanup(f.cleanup_slot);
  if (f.fd >= 0) close(f.fd);
  f = ScratchFile{};
}

std::string TempDir() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

int AddSignalCleanup(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  InstallSignalCleanup();
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(kArmed);
    return i;
  }
  return -1;
}

void RemoveSignalCleanup(int slot) {
  if (slot >= 0 && slot < kSlots) g_slots[slot].state.store(kFree);
}

namespace internal {
void ForceNamedTemporaries(bool on) { g_force_named.store(on); }
}  // namespace internal

Result<void> WriteOutputText(const OutputTarget& target, std::string_view text) {
  ASSIGN_OR_RETURN(OutputFile out, OutputFile::Create(target));
  RETURN_IF_ERROR(out.Write(text.data(), text.size()));
  return out.Commit();
}

}  // namespace rs
