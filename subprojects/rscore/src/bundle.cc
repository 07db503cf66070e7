#include "rscore/bundle.h"
#include "rscore/path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "rscore/identity.h"
#include "rscore/zstd_file.h"

namespace rs {
namespace {

Result<int64_t> ToInt64(const std::string& key, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (errno != 0 || end == v.c_str() || *end != '\0') {
    return Error("corrupt metadata: " + key + " = '" + v + "' is not a number");
  }
  return static_cast<int64_t>(x);
}

}  // namespace

Result<TempFile> TempFile::Create(const std::string& dir_in, const std::string& stem) {
  std::string dir = dir_in;
  if (dir.empty()) {
    const char* t = std::getenv("TMPDIR");
    dir = (t && *t) ? t : "/tmp";
  }
  std::string tmpl = dir + "/." + stem + ".XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  int fd = mkstemp(buf.data());
  if (fd < 0) return ErrnoError(dir + ": cannot create a temporary file", errno);
  fchmod(fd, 0600);
  close(fd);
  TempFile t;
  t.path_ = buf.data();
  return t;
}

Result<TempFile> TempFile::CreateUnnamed(const std::string& dir, const std::string& stem) {
  TempFile t;
  ASSIGN_OR_RETURN(t.scratch_, CreateScratchFile(dir.empty() ? TempDir() : dir, stem));
  t.path_ = t.scratch_.path;
  return t;
}

TempFile::TempFile(TempFile&& o) noexcept
    : path_(std::exchange(o.path_, {})), scratch_(std::exchange(o.scratch_, {})) {}
TempFile& TempFile::operator=(TempFile&& o) noexcept {
  if (this != &o) {
    Remove();
    path_ = std::exchange(o.path_, {});
    scratch_ = std::exchange(o.scratch_, {});
  }
  return *this;
}
TempFile::~TempFile() { Remove(); }
void TempFile::Remove() {
  if (scratch_.fd >= 0 || !scratch_.named.empty()) {
    ReleaseScratchFile(scratch_);
  } else if (!path_.empty()) {
    unlink(path_.c_str());
    unlink((path_ + "-wal").c_str());
    unlink((path_ + "-shm").c_str());
    unlink((path_ + "-journal").c_str());
  }
  path_.clear();
}

Result<BundleWriter> BundleWriter::Create(const std::string& out_path, int zstd_level) {
  if (out_path.empty()) return Error("--out: an output path is required");
  struct stat st {};
  std::string dir = DirOf(out_path);
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Error(out_path + ": directory '" + dir + "' does not exist");
  }
  if (access(dir.c_str(), W_OK) != 0) {
    return Error(out_path + ": directory '" + dir + "' is not writable");
  }
  if (stat(out_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return Error(out_path + ": is a directory; give a file name such as node0.rsb");
  }
  BundleWriter w;
  w.out_path_ = out_path;
  w.level_ = zstd_level;
  ASSIGN_OR_RETURN(w.tmp_db_, TempFile::Create(dir, BaseOf(out_path) + ".db"));
  ASSIGN_OR_RETURN(w.db_, Db::Open(w.tmp_db_.path(), Db::Mode::kReadWrite));
  RETURN_IF_ERROR(w.db_.Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"));
  RETURN_IF_ERROR(CreateSchema(w.db_, DbKind::kBundle));
  return w;
}

BundleWriter::~BundleWriter() = default;

Result<void> BundleWriter::SetMetadata(const std::string& key, const std::string& value) {
  ASSIGN_OR_RETURN(Statement st,
                   db_.Prepare("INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)"));
  return st.Bind(1, key).Bind(2, value).Run();
}

Result<void> BundleWriter::Finalize() {
  if (!db_.raw()) return Error(out_path_ + ": bundle already finalized");
  RETURN_IF_ERROR(CreateIndexes(db_));
  RETURN_IF_ERROR(db_.Exec("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;"));
  db_ = Db();  // close
  std::string partial = out_path_ + ".partial";
  auto r = CompressFile(tmp_db_.path(), partial, level_, 0600);
  if (!r.ok()) {
    unlink(partial.c_str());
    return r.error();
  }
  if (rename(partial.c_str(), out_path_.c_str()) != 0) {
    int e = errno;
    unlink(partial.c_str());
    return ErrnoError(out_path_ + ": cannot move bundle into place", e);
  }
  return Ok();
}

Result<BundleInfo> ReadBundleInfo(Db& db) {
  BundleInfo info;
  auto st = db.Prepare("SELECT key, value FROM metadata");
  if (!st.ok()) return Error("not a rankscope database (no metadata table)", ErrorKind::kCorrupt);
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st->Step());
    if (!row) break;
    info.metadata[st->Text(0)] = st->Text(1);
  }
  auto need = [&](const std::string& k) -> Result<std::string> {
    auto it = info.metadata.find(k);
    if (it == info.metadata.end() || it->second.empty()) {
      return Error("missing required metadata '" + k + "'");
    }
    return it->second;
  };
  ASSIGN_OR_RETURN(std::string fv, need("format_version"));
  ASSIGN_OR_RETURN(int64_t fvi, ToInt64("format_version", fv));
  if (fvi > kFormatVersion) {
    return Error("format version " + fv + " is newer than this rankscope understands (" +
                 std::to_string(kFormatVersion) + "); upgrade rankscope");
  }
  if (fvi < 1) return Error("invalid format version " + fv);
  info.format_version = static_cast<int>(fvi);
  ASSIGN_OR_RETURN(info.schema_version, CheckSchemaVersion(db));
  ASSIGN_OR_RETURN(info.db_kind, need("db_kind"));
  if (info.db_kind == "bundle") {
    ASSIGN_OR_RETURN(info.recording_id, need("recording_id"));
    ASSIGN_OR_RETURN(info.node, need("node"));
    // The one node-name rule of every tool (the recorder's, the merge's).
    RETURN_IF_ERROR(ValidateNodeName(info.node, "the bundle's metadata"));
    ASSIGN_OR_RETURN(std::string s, need("start_ns"));
    ASSIGN_OR_RETURN(info.start_ns, ToInt64("start_ns", s));
    ASSIGN_OR_RETURN(std::string e, need("end_ns"));
    ASSIGN_OR_RETURN(info.end_ns, ToInt64("end_ns", e));
  } else if (info.db_kind != "merged") {
    return Error("unknown db_kind '" + info.db_kind + "'");
  }
  return info;
}

Result<OpenedDb> OpenRankscopeFile(const std::string& path, bool check_integrity,
                                   const InputLimits& limits) {
  // The file's name once, in front (the guard's errors already carry it).
  auto named = [&](const Error& e) {
    const std::string pre = path + ": ";
    std::string m = e.message();
    for (size_t at; (at = m.find(pre)) != std::string::npos;) m.erase(at, pre.size());
    return Error(pre + m);
  };
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return ErrnoError(path, errno);
  if (S_ISDIR(st.st_mode)) return Error(path + ": is a directory, not a bundle or database");
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISCHR(st.st_mode)    ? "a character device"
                       : S_ISFIFO(st.st_mode) ? "a pipe"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                                              : "a socket";
    return Error(path + ": not a regular file (" + kind + "), not a bundle or database");
  }
  if (st.st_size == 0) return Error(path + ": empty file, not a bundle", ErrorKind::kCorrupt);
  OpenedDb out;
  out.source_path_ = path;
  if (HasZstdMagic(path)) {
    out.compressed_ = true;
    // Unnamed: even a killed process leaves no decompressed copy behind.
    ASSIGN_OR_RETURN(out.tmp_, TempFile::CreateUnnamed("", "rankscope-open"));
    RETURN_IF_ERROR(DecompressToFd(path, out.tmp_.fd(),
                                   "the decompressed copy of " + path + " in " + TempDir()));
    out.sqlite_path_ = out.tmp_.path();
  } else {
    out.sqlite_path_ = path;
  }
  // Reject files that are neither zstd nor SQLite with a message a user understands.
  {
    int fd = open(out.sqlite_path_.c_str(), O_RDONLY | O_CLOEXEC);
    char magic[16] = {};
    ssize_t n = fd >= 0 ? read(fd, magic, sizeof magic) : -1;
    if (fd >= 0) close(fd);
    if (n != 16 || std::memcmp(magic, "SQLite format 3", 16) != 0) {
      return Error(path + (out.compressed_
                               ? ": decompressed data is not an SQLite database"
                               : ": not a rankscope bundle (.rsb) or database (.rsdb)"));
    }
  }
  auto db = Db::Open(out.sqlite_path_, Db::Mode::kReadOnly);
  if (!db.ok()) return db.error().Wrap(path);
  out.db_ = std::make_unique<Db>(std::move(db).value());
  if (auto g = out.db_->GuardInput(path, limits); !g.ok()) return named(g.error());
  // What the schema holds before anything else is read: a view or trigger could make any
  // later statement run without end.
  if (auto objects = CheckSchemaObjects(*out.db_); !objects.ok()) {
    return named(objects.error());
  }
  if (check_integrity) {
    auto qc = out.db_->QueryText("PRAGMA quick_check");
    if (!qc.ok() && qc.error().Is(ErrorKind::kRefused)) return qc.error();  // a guard's limit
    if (!qc.ok()) {
      return Error(path + ": SQLite image is corrupt (" + qc.error().message() + ")",
                   ErrorKind::kCorrupt);
    }
    if (!qc.value() || *qc.value() != "ok") {
      return Error(path + ": SQLite image is corrupt (" + qc.value().value_or("?") + ")",
                   ErrorKind::kCorrupt);
    }
  }
  auto info = ReadBundleInfo(*out.db_);
  if (!info.ok()) return named(info.error());
  out.info_ = std::move(info).value();
  // STRICT tables keep their types; those of earlier versions (and foreign files) are checked.
  auto strict = AllKnownTablesStrict(*out.db_);
  if (!strict.ok()) return named(strict.error());
  auto values = CheckValues(*out.db_, !strict.value(), limits.max_value_bytes);
  if (!values.ok()) return named(values.error());
  return out;
}

}  // namespace rs
