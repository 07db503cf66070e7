#include "recorder/recording_db.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <utility>
#include <vector>

#include "recorder/log.h"
#include "recorder/options.h"
#include "recorder/work_dir.h"
#include "rscore/path.h"
#include "rscore/schema.h"
#include "rscore/zstd_file.h"

namespace rs::rec {
namespace {

using rs::BaseOf;
using rs::DirOf;

constexpr char kReserveSuffix[] = ".reserve";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

uint64_t FreeBytesIn(const std::string& dir) {
  struct statvfs vfs {};
  if (statvfs(dir.c_str(), &vfs) != 0) return 0;
  // Root may also use the blocks a file system keeps back for it.
  const uint64_t blocks = geteuid() == 0 ? vfs.f_bfree : vfs.f_bavail;
  return blocks * vfs.f_frsize;
}

uint64_t FileBytes(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

std::atomic<uint64_t> g_full_errors{0};

void OnSqliteLog(void*, int code, const char*) {
  if ((code & 0xff) == SQLITE_FULL) g_full_errors.fetch_add(1, std::memory_order_relaxed);
}

// Holds `bytes` of the file system in a file of zeros (fallocate, else written).
uint64_t MakeReserve(const std::string& path, uint64_t bytes) {
  if (bytes == 0) return 0;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return 0;
  bool ok = fallocate(fd, 0, 0, static_cast<off_t>(bytes)) == 0;
  if (!ok && (errno == EOPNOTSUPP || errno == ENOSYS)) {
    std::vector<char> zeros(1 << 20, 0);
    uint64_t left = bytes;
    ok = true;
    while (left > 0 && ok) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(left, zeros.size()));
      ssize_t w = write(fd, zeros.data(), n);
      if (w < 0 && errno == EINTR) continue;
      ok = w > 0;
      if (ok) left -= static_cast<uint64_t>(w);
    }
  }
  close(fd);
  if (!ok) {
    unlink(path.c_str());
    return 0;
  }
  return bytes;
}

// Moves the compressed `partial` to `out`: replacing an existing file only with `force`.
// Without it, a file that appeared at `out` meanwhile stays and the bundle goes next to it
// (OUT-PID.rsb); `out` is updated to where it went.
rs::Result<void> PlaceBundle(const std::string& partial, std::string& out, bool force) {
  if (force) {
    if (rename(partial.c_str(), out.c_str()) != 0) {
      return rs::Error(out + ": cannot move the bundle into place: " + std::strerror(errno));
    }
    return rs::Ok();
  }
  std::string target = out;
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (renameat2(AT_FDCWD, partial.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0) {
      out = target;
      return rs::Ok();
    }
    int e = errno;
    if (e == EINVAL || e == ENOSYS) {  // a file system without RENAME_NOREPLACE
      if (link(partial.c_str(), target.c_str()) == 0) {
        unlink(partial.c_str());
        out = target;
        return rs::Ok();
      }
      e = errno;
    }
    if (e != EEXIST) {
      return rs::Error(target + ": cannot move the bundle into place: " + std::strerror(e));
    }
    std::string stem = EndsWith(out, ".rsb") ? out.substr(0, out.size() - 4) : out;
    target = stem + "-" + std::to_string(getpid()) +
             (attempt ? "-" + std::to_string(attempt) : "") + ".rsb";
    if (attempt == 0) {
      Log("%s appeared while recording; not replacing it "
          "(no --force)",
          out.c_str());
    }
  }
  return rs::Error(out + ": cannot find a free name for the bundle");
}

struct Compressed {
  bool indexes_left_out = false;
};

// Indexes (left out when they do not fit), no journal, closed, compressed and moved into place.
rs::Result<Compressed> FinishAndCompress(rs::Db& db, const std::string& db_path, std::string& out,
                                         bool force, int level, bool with_indexes) {
  Compressed c;
  if (!with_indexes) {
    c.indexes_left_out = true;
    Log("%s: indexes left out (the disk is full: the room is kept for "
        "the bundle); the bundle is complete without them, queries on it are slower",
        db_path.c_str());
  } else if (auto ix = rs::CreateIndexes(db); !ix.ok()) {
    c.indexes_left_out = true;
    Log("%s: indexes left out (%s); the bundle is complete without "
        "them, queries on it are slower",
        db_path.c_str(), ix.error().message().c_str());
  }
  (void)db.Exec("PRAGMA journal_mode=DELETE");
  db = rs::Db();  // closed once its last statement is finalized; nothing is pending
  ASSIGN_OR_RETURN(PartialFile partial, CreatePartialBeside(out));
  auto written = rs::CompressToFd(db_path, partial.fd, partial.path, level);
  if (written.ok() && fsync(partial.fd) != 0) {
    written = rs::Error(partial.path + ": fsync failed: " + std::strerror(errno));
  }
  if (close(partial.fd) != 0 && written.ok()) {
    written = rs::Error(partial.path + ": cannot write: " + std::strerror(errno));
  }
  if (written.ok()) written = PlaceBundle(partial.path, out, force);
  if (!written.ok()) {
    unlink(partial.path.c_str());
    return written.error();
  }
  return c;
}

std::string KeptMessage(const std::string& why, const std::string& db_path,
                        const std::string& out) {
  return "cannot write the bundle " + out + ": " + why + " (" +
         FormatBytes(FreeBytesIn(DirOf(out))) + " free in " + DirOf(out) +
         "); the recording is kept, uncompressed, in " + db_path + " (" +
         FormatBytes(FileBytes(db_path)) +
         "): once there is room, make the bundle with: " + RecoverCommand(db_path) + " --out " +
         out;
}

}  // namespace

std::string FormatBytes(uint64_t bytes) {
  char buf[64];
  if (bytes < 1024) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else if (bytes < (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024);
  } else if (bytes < (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  }
  return buf;
}

rs::Result<void> WatchSqliteFullErrors() {
  if (sqlite3_config(SQLITE_CONFIG_LOG, &OnSqliteLog, nullptr) != SQLITE_OK) {
    return rs::Error("SQLite is already initialized: its error log must be set first");
  }
  return rs::Ok();
}

rs::Result<void> CheckOutPath(const std::string& out_path, bool force, bool* usage) {
  if (usage) *usage = false;
  if (out_path.empty()) return rs::Error("--out: an output path is required");
  if (out_path == "-") {
    if (usage) *usage = true;
    return rs::Error(kOutDashRefused);
  }
  struct stat st {};
  const std::string dir = DirOf(out_path);
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return rs::Error(out_path + ": directory '" + dir + "' does not exist");
  }
  if (access(dir.c_str(), W_OK) != 0) {
    return rs::Error(out_path + ": directory '" + dir + "' is not writable");
  }
  if (stat(out_path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return rs::Error(out_path + ": is a directory; give a file name such as node0.rsb");
    }
    if (!force) {
      if (usage) *usage = true;
      return rs::Error(out_path + ": exists; add --force to replace it, or choose another --out");
    }
  }
  return rs::Ok();
}

rs::Result<RecordingDb> RecordingDb::Create(const std::string& out_path,
                                            const RecordingDbOptions& options) {
  RETURN_IF_ERROR(CheckOutPath(out_path, /*force=*/true));
  RecordingDb w;
  w.out_path_ = out_path;
  w.options_ = options;
  w.full_errors_at_create_ = g_full_errors.load(std::memory_order_relaxed);
  const std::string dir = DirOf(out_path);
  // The database and its journals in a directory of the recorder's own (see work_dir.h).
  ASSIGN_OR_RETURN(const std::string work_dir, MakeWorkDir(out_path));
  w.temp_path_ = work_dir + "/" + kWorkDbName;
  const int fd =
      open(w.temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int e = errno;
    rmdir(work_dir.c_str());
    w.temp_path_.clear();
    return rs::Error(work_dir +
                     ": cannot create the recording's temporary database: " + std::strerror(e));
  }
  close(fd);
  ASSIGN_OR_RETURN(w.db_, rs::Db::Open(w.temp_path_, rs::Db::Mode::kReadWrite));
  // synchronous=OFF: a commit is in the kernel's page cache when it returns, which is what
  // survives the recorder's own death; a crash of the node's kernel is not covered.
  RETURN_IF_ERROR(w.db_.Exec("PRAGMA journal_mode=" + options.journal_mode +
                             "; PRAGMA synchronous=OFF; PRAGMA cache_size=-32768"));
  RETURN_IF_ERROR(rs::CreateSchema(w.db_, rs::DbKind::kBundle));
  const uint64_t want = std::min(options.max_reserve_bytes, FreeBytesIn(dir) / 8) & ~uint64_t{4095};
  w.reserve_path_ = w.temp_path_ + kReserveSuffix;
  w.reserve_bytes_ = MakeReserve(w.reserve_path_, want);
  return w;
}

RecordingDb::RecordingDb(RecordingDb&& o) noexcept
    : out_path_(std::move(o.out_path_)),
      temp_path_(std::exchange(o.temp_path_, {})),
      reserve_path_(std::exchange(o.reserve_path_, {})),
      options_(std::move(o.options_)),
      reserve_bytes_(std::exchange(o.reserve_bytes_, 0)),
      full_errors_at_create_(o.full_errors_at_create_),
      kept_(o.kept_),
      indexes_left_out_(o.indexes_left_out_),
      db_(std::move(o.db_)) {}

RecordingDb::~RecordingDb() {
  ReleaseReserve();
  if (temp_path_.empty()) return;
  if (kept_) {
    db_ = rs::Db();
    return;
  }
  db_ = rs::Db();
  RemoveDbFiles(temp_path_);
}

rs::Result<void> RecordingDb::SetMetadata(const std::string& key, const std::string& value) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db_.Prepare("INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)"));
  return st.Bind(1, key).Bind(2, value).Run();
}

bool RecordingDb::NoSpace() const {
  if (g_full_errors.load(std::memory_order_relaxed) > full_errors_at_create_) return true;
  if (db_.raw() != nullptr) {
    const int ec = sqlite3_extended_errcode(db_.raw());
    const int sys = sqlite3_system_errno(db_.raw());
    if ((ec & 0xff) == SQLITE_FULL || sys == ENOSPC || sys == EDQUOT) return true;
  }
  return FreeBytes() < (uint64_t{256} << 10);
}

uint64_t RecordingDb::FreeBytes() const {
  return FreeBytesIn(DirOf(temp_path_.empty() ? out_path_ : temp_path_));
}

uint64_t RecordingDb::BundleBytesNeeded() const { return FileBytes(temp_path_) / 4; }

bool RecordingDb::SpaceShort() const { return FreeBytes() < BundleBytesNeeded(); }

void RecordingDb::ReleaseReserve() {
  if (reserve_path_.empty()) return;
  unlink(reserve_path_.c_str());
  reserve_path_.clear();
  reserve_bytes_ = 0;
}

rs::Result<void> RecordingDb::Finalize(bool with_indexes) {
  if (!db_.raw()) return rs::Error(out_path_ + ": bundle already finalized");
  ReleaseReserve();
  auto c = FinishAndCompress(db_, temp_path_, out_path_, options_.force, options_.zstd_level,
                             with_indexes);
  if (!c.ok()) {
    kept_ = true;
    return rs::Error(KeptMessage(c.error().message(), temp_path_, out_path_));
  }
  indexes_left_out_ = c->indexes_left_out;
  return rs::Ok();
}

rs::Result<std::string> BundleFromDatabase(const std::string& db_path, std::string out,
                                           int zstd_level) {
  ASSIGN_OR_RETURN(rs::Db db, rs::Db::Open(db_path, rs::Db::Mode::kReadWrite));
  auto c = FinishAndCompress(db, db_path, out, /*force=*/false, zstd_level, /*with_indexes=*/true);
  RemoveDbFiles(db_path);
  if (!c.ok()) return c.error();
  return out;
}

rs::Result<rs::Statement> PrepareClockRefInsert(rs::Db& db) {
  return db.Prepare(
      "INSERT INTO clock_refs(node, seq, kind, mono_ns, realtime_ns, read_span_ns, maxerror_us, "
      "esterror_us, clock_state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
}

rs::Result<void> WriteClockRef(rs::Statement& st, const std::string& node, int64_t seq,
                               const rs::ClockRef& r) {
  st.Bind(1, node).Bind(2, seq).Bind(3, r.kind).Bind(4, r.mono_ns).Bind(5, r.realtime_ns);
  st.Bind(6, r.read_span_ns);
  if (r.maxerror_us >= 0)
    st.Bind(7, r.maxerror_us);
  else
    st.BindNull(7);
  if (r.esterror_us >= 0)
    st.Bind(8, r.esterror_us);
  else
    st.BindNull(8);
  if (r.clock_state.empty())
    st.BindNull(9);
  else
    st.Bind(9, r.clock_state);
  return st.Run();
}

std::string RecoverCommand(const std::string& temp_path) {
  const std::string work_dir = WorkDirOf(temp_path);
  return "rankscope-record --recover " + (work_dir.empty() ? temp_path : work_dir);
}

rs::Result<RecoverResult> Recover(const std::string& path_in, const std::string& out_in, bool force,
                                  int zstd_level) {
  std::string path = path_in;  // "DIR/" names DIR
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  ASSIGN_OR_RETURN(const std::string db_path, RecoverableDb(path));
  auto parsed = ParseTempName(BaseOf(path));
  RETURN_IF_ERROR(
      CheckOutPath(out_in.empty() && parsed ? DirOf(path) + "/" + parsed->first : out_in, force));
  if (parsed && parsed->second != getpid() && ProcessAlive(parsed->second)) {
    return rs::Error(path + ": recorder " + std::to_string(parsed->second) +
                     " is still writing it; stop that recorder (SIGINT or SIGTERM) and it "
                     "writes its bundle itself");
  }
  if (rs::HasZstdMagic(db_path)) return rs::Error(path + ": already a compressed bundle");
  RecoverResult res;
  res.out_path = out_in;
  if (res.out_path.empty()) {
    if (!parsed) {
      return rs::Error(path + ": not named like a recorder's temporary database; give --out");
    }
    res.out_path = (DirOf(path) == "." && path.find('/') == std::string::npos ? std::string()
                                                                              : DirOf(path) + "/") +
                   parsed->first;
  }
  unlink((db_path + kReserveSuffix).c_str());  // room for the bundle

  // Opening read-write rolls back the journal of a commit the recorder did not finish.
  ASSIGN_OR_RETURN(rs::Db db, rs::Db::Open(db_path, rs::Db::Mode::kReadWrite));
  {
    auto qc = db.QueryText("PRAGMA quick_check");
    if (!qc.ok()) return rs::Error(path + ": damaged database: " + qc.error().message());
    if (!qc.value() || *qc.value() != "ok") {
      return rs::Error(path + ": damaged database: " + qc.value().value_or("?"));
    }
  }
  std::map<std::string, std::string> meta;
  {
    auto sel = db.Prepare("SELECT key, value FROM metadata");
    if (!sel.ok()) return rs::Error(path + ": not a rankscope recording (no metadata table)");
    for (;;) {
      ASSIGN_OR_RETURN(bool row, sel->Step());
      if (!row) break;
      meta[sel->Text(0)] = sel->Text(1);
    }
  }
  for (const char* key : {"db_kind", "recording_id", "node", "start_ns"}) {
    if (meta[key].empty()) {
      return rs::Error(path + ": not a recorder's database (no metadata '" + key + "')");
    }
  }
  if (meta["db_kind"] != "bundle") {
    return rs::Error(path + ": a '" + meta["db_kind"] + "' database, not a node's recording");
  }
  res.node = meta["node"];
  res.start_ns = std::strtoll(meta["start_ns"].c_str(), nullptr, 10);
  // Finalized by its recorder, only the bundle could not be written (or recovered before).
  res.finished =
      !meta["end_ns"].empty() && !meta["stop_reason"].empty() && meta["stop_reason"] != "recovered";
  int64_t last = res.start_ns;
  for (std::string_view t : rs::kEventTables) {
    ASSIGN_OR_RETURN(bool has, rs::HasTable(db, t));
    if (!has) continue;
    ASSIGN_OR_RETURN(int64_t n, db.QueryInt("SELECT COUNT(*) FROM " + std::string(t)));
    res.rows.emplace_back(std::string(t), n);
    res.events += n;
    if (n > 0) {
      ASSIGN_OR_RETURN(int64_t ts, db.QueryInt("SELECT MAX(timestamp_ns) FROM " + std::string(t)));
      last = std::max(last, ts);
    }
  }
  if (!meta["end_ns"].empty()) {
    res.end_ns = std::strtoll(meta["end_ns"].c_str(), nullptr, 10);
  } else {
    // The recording's end is its last committed event (or clock reference).
    auto ref = db.QueryInt("SELECT COALESCE(MAX(realtime_ns), 0) FROM clock_refs");
    if (ref.ok()) last = std::max(last, *ref);
    res.end_ns = last;
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    const int64_t now_ns = int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
    ASSIGN_OR_RETURN(rs::Statement set,
                     db.Prepare("INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)"));
    for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"end_ns", std::to_string(res.end_ns)},
             {"stop_reason", "recovered"},
             {"recovered_ns", std::to_string(now_ns)}}) {
      auto r = set.Bind(1, k).Bind(2, v).Run();
      if (!r.ok()) return r.error().Wrap(path);
    }
  }
  // Indexes only where they leave room for the bundle.
  const uint64_t db_bytes = FileBytes(db_path);
  const bool with_indexes = FreeBytesIn(DirOf(res.out_path)) > db_bytes / 4 + db_bytes / 2;
  auto c = FinishAndCompress(db, db_path, res.out_path, force, zstd_level, with_indexes);
  if (!c.ok()) {
    return rs::Error("cannot write the bundle " + res.out_path + ": " + c.error().message() + " (" +
                     FormatBytes(FreeBytesIn(DirOf(res.out_path))) + " free in " +
                     DirOf(res.out_path) + "); " + path + " is unchanged apart from its " +
                     "metadata: free some space and run the same command again");
  }
  res.indexes_left_out = c->indexes_left_out;
  RemoveDbFiles(db_path);
  return res;
}

}  // namespace rs::rec
