#include "recorder/cut_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>

#include "recorder/work_dir.h"
#include "rscore/identity.h"
#include "rscore/path.h"
#include "rscore/unique_fd.h"

namespace rs::rec {
namespace {

using rs::UniqueFd;

constexpr char kRequestFile[] = "request";
constexpr size_t kMaxCutIdLength = 128;
// The reasons a recorder posts a request for (a stop or a recovery cut has no request).
constexpr const char* kRequestReasons[] = {"request", "stall", "slowdown"};

std::string UtcStamp(int64_t ns) {
  time_t secs = static_cast<time_t>(ns / 1'000'000'000);
  tm t{};
  gmtime_r(&secs, &t);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &t);
  return buf;
}

bool IsRequestReason(std::string_view reason) {
  return std::any_of(std::begin(kRequestReasons), std::end(kRequestReasons),
                     [&](const char* r) { return reason == r; });
}

// The names recorders give CUT-ID directories (UTC stamp, reason, node: [A-Za-z0-9._-]).
bool ValidCutId(std::string_view id) {
  if (id.empty() || id.size() > kMaxCutIdLength || id[0] == '.') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

bool OwnedByRecorders(const struct stat& st) { return st.st_uid == 0 || st.st_uid == geteuid(); }

UniqueFd OpenDir(const std::string& path) {
  return UniqueFd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

// A directory within `dfd`, never through a link.
UniqueFd OpenSubdir(int dfd, const std::string& name) {
  return UniqueFd(openat(dfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

std::vector<std::string> ListNames(int dfd) {
  std::vector<std::string> names;
  DIR* d = fdopendir(dup(dfd));
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      names.emplace_back(e->d_name);
    }
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool HasRegularFile(int dfd, const std::string& name) {
  struct stat st {};
  return fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

std::optional<int64_t> ParseNs(const std::string& text) {
  if (text.empty() || text.size() > 19 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  errno = 0;
  const long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno != 0 || v <= 0) return std::nullopt;
  return v;
}

// The request of CUT-ID `id`: nullopt when there is none (a cut without a request, or not a
// cut at all); `why` says why one was refused.
std::optional<CutRequest> ReadCutRequest(int cut_dfd, uid_t dir_owner, const std::string& id,
                                         std::string& why) {
  struct stat st {};
  if (id[0] == '.' || fstatat(cut_dfd, id.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return std::nullopt;
  }
  if (S_ISLNK(st.st_mode)) {
    why = "a symbolic link where a cut's directory belongs";
    return std::nullopt;
  }
  if (!S_ISDIR(st.st_mode)) return std::nullopt;  // a file beside the cuts
  if (!ValidCutId(id)) {
    why = "a directory name no recorder makes";
    return std::nullopt;
  }
  UniqueFd sub = OpenSubdir(cut_dfd, id);
  if (!sub.ok() || fstatat(sub.get(), kRequestFile, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return std::nullopt;
  }
  // Checked before it is opened (a FIFO would block, a link could lead to /dev/zero), and
  // again on the descriptor: the name may have been swapped in between.
  auto refuse_file = [&](const struct stat& s) -> std::string {
    if (!S_ISREG(s.st_mode)) return "its request is not a regular file";
    if (s.st_nlink != 1) return "its request has " + std::to_string(s.st_nlink) + " links";
    if (!OwnedByRecorders(s) && s.st_uid != dir_owner) {
      return "its request is owned by uid " + std::to_string(s.st_uid) +
             " (requests are read from root, uid " + std::to_string(geteuid()) +
             " and the cut directory's owner uid " + std::to_string(dir_owner) + " only)";
    }
    if (s.st_size > kMaxRequestBytes) {
      return "its request is " + std::to_string(s.st_size) + " bytes (a recorder's is under " +
             std::to_string(kMaxRequestBytes) + ")";
    }
    return "";
  };
  if (why = refuse_file(st); !why.empty()) return std::nullopt;
  UniqueFd fd(
      openat(sub.get(), kRequestFile, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.ok() || fstat(fd.get(), &st) != 0) return std::nullopt;
  if (why = refuse_file(st); !why.empty()) return std::nullopt;
  std::string text(static_cast<size_t>(kMaxRequestBytes) + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > static_cast<size_t>(kMaxRequestBytes)) {
    why = "its request grew past " + std::to_string(kMaxRequestBytes) + " bytes";
    return std::nullopt;
  }
  text.resize(got);
  CutRequest r;
  r.cut_id = id;
  std::optional<int64_t> cut_ns;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "node") r.node = value;
    if (key == "reason") r.reason = value;
    if (key == "cut_ns") cut_ns = ParseNs(value);
  }
  // Only what recorders write: a node name, one of their reasons, a time.
  if (!rs::ValidateNodeName(r.node, "request").ok() || !IsRequestReason(r.reason) || !cut_ns) {
    why = "its request is not one a recorder writes (node, reason, cut_ns)";
    return std::nullopt;
  }
  r.cut_ns = *cut_ns;
  return r;
}

PendingRequests AllCutRequests(const std::string& cut_dir) {
  PendingRequests all;
  UniqueFd d = OpenDir(cut_dir);
  struct stat dir_st {};
  if (!d.ok() || fstat(d.get(), &dir_st) != 0) return all;
  for (const std::string& id : ListNames(d.get())) {
    std::string why;
    if (auto r = ReadCutRequest(d.get(), dir_st.st_uid, id, why)) {
      all.pending.push_back(*r);
    } else if (!why.empty()) {
      all.refused.push_back({id, why});
    }
  }
  std::stable_sort(all.pending.begin(), all.pending.end(),
                   [](const CutRequest& a, const CutRequest& b) { return a.cut_ns < b.cut_ns; });
  return all;
}

// "STAMP-REASON-NODE": whether `node` asked for this cut for an incident of its own.
bool OwnIncident(const std::string& cut_id, const std::string& node) {
  const size_t dash = cut_id.find('-');
  if (dash == std::string::npos) return false;
  const std::string rest = cut_id.substr(dash + 1);
  return std::any_of(std::begin(kRequestReasons), std::end(kRequestReasons),
                     [&](const char* r) { return rest == std::string(r) + "-" + node; });
}

}  // namespace

rs::Result<void> MakeDirs(const std::string& dir) {
  if (dir.empty()) return rs::Ok();
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return rs::Ok();
    return rs::Error(dir + ": not a directory");
  }
  RETURN_IF_ERROR(MakeDirs(rs::DirOf(dir) == dir ? "" : rs::DirOf(dir)));
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return rs::Error(dir + ": cannot create the directory: " + std::strerror(errno));
  }
  return rs::Ok();
}

std::string CutPath(const std::string& cut_dir, const CutInfo& info) {
  const std::string id =
      info.cut_id.empty() ? UtcStamp(info.cut_ns) + "-" + info.reason : info.cut_id;
  return cut_dir + "/" + id + "/" + info.node + ".rsb";
}

rs::Result<std::string> CutIdDir(const std::string& cut_dir, const std::string& cut_id) {
  if (!ValidCutId(cut_id)) return rs::Error(cut_dir + ": '" + cut_id + "' is no cut's name");
  const std::string dir = cut_dir + "/" + cut_id;
  if (mkdir(dir.c_str(), 0700) == 0) return dir;
  if (errno != EEXIST) {
    return rs::Error(dir + ": cannot create the directory: " + std::strerror(errno));
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return rs::Error(dir + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode) || !OwnedByRecorders(st)) {
    return rs::Error(dir + ": " +
                     (S_ISLNK(st.st_mode)    ? std::string("a symbolic link")
                      : !S_ISDIR(st.st_mode) ? std::string("not a directory")
                                             : "a directory of uid " + std::to_string(st.st_uid)) +
                     ", not a cut directory a recorder made: no cut is written there");
  }
  return dir;
}

rs::Result<CutRequest> PostCutRequest(const std::string& cut_dir, const std::string& node,
                                      int64_t cut_ns, const std::string& reason, int64_t join_ns) {
  for (const CutRequest& r : AllCutRequests(cut_dir).pending) {
    if (std::llabs(r.cut_ns - cut_ns) <= join_ns) return r;
  }
  CutRequest req{UtcStamp(cut_ns) + "-" + reason + "-" + node, node, reason, cut_ns};
  ASSIGN_OR_RETURN(const std::string dir, CutIdDir(cut_dir, req.cut_id));
  UniqueFd sub = OpenSubdir(AT_FDCWD, dir);
  if (!sub.ok()) return rs::Error(dir + ": " + std::strerror(errno));
  // Written whole under a hidden name of its own (O_EXCL), then renamed: a watcher never
  // reads half a request, and no file found under either name is written through.
  const std::string tmp = "." + std::string(kRequestFile) + "." + std::to_string(getpid());
  unlinkat(sub.get(), tmp.c_str(), 0);  // one a recorder with this pid left
  UniqueFd out(
      openat(sub.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!out.ok()) return rs::Error(dir + "/" + tmp + ": cannot create: " + std::strerror(errno));
  const std::string text =
      "node=" + node + "\ncut_ns=" + std::to_string(cut_ns) + "\nreason=" + reason + "\n";
  const bool written =
      write(out.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int e = errno;
  out.reset();
  if (!written || renameat(sub.get(), tmp.c_str(), sub.get(), kRequestFile) != 0) {
    const int err = written ? errno : e;
    unlinkat(sub.get(), tmp.c_str(), 0);
    return rs::Error(dir + "/" + kRequestFile + ": " + std::strerror(err));
  }
  return req;
}

PendingRequests PendingCutRequests(const std::string& cut_dir, const std::string& node,
                                   int64_t since_ns) {
  PendingRequests all = AllCutRequests(cut_dir);
  UniqueFd d = OpenDir(cut_dir);
  std::erase_if(all.pending, [&](const CutRequest& r) {
    if (r.cut_ns < since_ns) return true;
    UniqueFd sub = OpenSubdir(d.get(), r.cut_id);
    return sub.ok() && HasRegularFile(sub.get(), node + ".rsb");
  });
  return all;
}

std::vector<std::string> RotateCuts(const std::string& cut_dir, const std::string& node,
                                    uint64_t max_bytes) {
  std::vector<std::string> removed;
  UniqueFd d = OpenDir(cut_dir);
  if (max_bytes == 0 || !d.ok()) return removed;
  const std::string bundle = node + ".rsb";
  struct Cut {
    std::string id;
    uint64_t bytes;
  };
  std::vector<Cut> cuts;  // oldest first (CUT-ID begins with its UTC time)
  uint64_t total = 0;
  for (const std::string& id : ListNames(d.get())) {
    struct stat st {};
    if (id[0] == '.' || fstatat(d.get(), id.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode) || !OwnedByRecorders(st)) {
      continue;
    }
    UniqueFd sub = OpenSubdir(d.get(), id);
    if (!sub.ok() || fstatat(sub.get(), bundle.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode)) {
      continue;
    }
    cuts.push_back({id, static_cast<uint64_t>(st.st_size)});
    total += static_cast<uint64_t>(st.st_size);
  }
  if (cuts.empty()) return removed;
  // Kept whatever the cap: the newest cut, and the newest of this node's own incidents.
  size_t own_incident = cuts.size();
  for (size_t i = 0; i < cuts.size(); ++i) {
    if (OwnIncident(cuts[i].id, node)) own_incident = i;
  }
  for (size_t i = 0; i + 1 < cuts.size() && total > max_bytes; ++i) {
    if (i == own_incident) continue;
    UniqueFd sub = OpenSubdir(d.get(), cuts[i].id);
    if (!sub.ok() || unlinkat(sub.get(), bundle.c_str(), 0) != 0) continue;
    total -= cuts[i].bytes;
    removed.push_back(cut_dir + "/" + cuts[i].id + "/" + bundle);
    // The directory goes with its last bundle (and the request that made it).
    const std::vector<std::string> left = ListNames(sub.get());
    const bool bundles_left = std::any_of(left.begin(), left.end(), [](const std::string& n) {
      return n.size() > 4 && n.compare(n.size() - 4, 4, ".rsb") == 0;
    });
    if (!bundles_left) {
      unlinkat(sub.get(), kRequestFile, 0);
      unlinkat(d.get(), cuts[i].id.c_str(), AT_REMOVEDIR);
    }
  }
  return removed;
}

std::vector<std::string> RemoveStaleCutFiles(const std::string& cut_dir, const std::string& node) {
  std::vector<std::string> removed;
  const std::string copy_prefix = "." + node + ".cut-";
  const std::string partial_prefix = "." + node + ".rsb.partial-";
  const std::string old_partial = node + ".rsb.partial";  // earlier recorders' name
  UniqueFd d = OpenDir(cut_dir);
  if (!d.ok()) return removed;
  auto gone = [](pid_t pid) { return pid != getpid() && !ProcessAlive(pid); };
  for (const std::string& cut : ListNames(d.get())) {
    if (cut[0] == '.') continue;
    UniqueFd sub = OpenSubdir(d.get(), cut);  // a link is not followed out of the directory
    if (!sub.ok()) continue;
    std::vector<std::string> stale;
    for (const std::string& name : ListNames(sub.get())) {
      if (name == old_partial) {
        stale.push_back(name);
      } else if (name.compare(0, partial_prefix.size(), partial_prefix) == 0) {
        if (auto pid = ParsePartialName(name); pid && gone(*pid)) stale.push_back(name);
      } else if (name.compare(0, copy_prefix.size(), copy_prefix) == 0) {
        // PID.db, PID.db-journal, PID.db-wal, PID.db-shm
        const size_t digits = name.find_first_not_of("0123456789", copy_prefix.size());
        const std::string suffix = digits == std::string::npos ? "" : name.substr(digits);
        if (digits == copy_prefix.size() || digits - copy_prefix.size() > 9 ||
            (suffix != ".db" && suffix != ".db-journal" && suffix != ".db-wal" &&
             suffix != ".db-shm")) {
          continue;
        }
        const pid_t pid = static_cast<pid_t>(std::strtol(
            name.substr(copy_prefix.size(), digits - copy_prefix.size()).c_str(), nullptr, 10));
        if (gone(pid)) stale.push_back(name);
      }
    }
    for (const std::string& name : stale) {  // sorted, as listed
      if (unlinkat(sub.get(), name.c_str(), 0) == 0)
        removed.push_back(cut_dir + "/" + cut + "/" + name);
    }
  }
  return removed;
}

}  // namespace rs::rec
