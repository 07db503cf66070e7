#include "recorder/work_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "rscore/path.h"

namespace rs::rec {
namespace {

using rs::BaseOf;
using rs::DirOf;

constexpr char kTempMarker[] = ".rec-";
constexpr char kOldDbSuffix[] = ".db";  // the database file of an earlier recorder
constexpr char kReserveSuffix[] = ".reserve";
constexpr char kPartialMarker[] = ".partial-";
constexpr const char* kJournalSuffixes[] = {"-journal", "-wal", "-shm"};

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "PID-XXXXXX" -> PID.
std::optional<pid_t> ParsePidAndRandom(const std::string& rest) {
  const size_t dash = rest.find('-');
  if (dash == std::string::npos || dash == 0 || rest.size() - dash - 1 != 6) return std::nullopt;
  pid_t pid = 0;
  for (size_t i = 0; i < dash; ++i) {
    if (rest[i] < '0' || rest[i] > '9' || pid > 100'000'000) return std::nullopt;
    pid = pid * 10 + (rest[i] - '0');
  }
  return pid;
}

std::string Template(const std::string& out, const char* marker) {
  return DirOf(out) + "/." + BaseOf(out) + marker + std::to_string(getpid()) + "-XXXXXX";
}

uint64_t FileBytes(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// A file of this recorder's: regular (not a link), of this user, one link.
rs::Result<void> CheckOwnFile(const std::string& path, const std::string& recovering) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return rs::Error(path + ": " + std::strerror(errno));
  std::string what;
  if (!S_ISREG(st.st_mode)) {
    what = S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file";
  } else if (st.st_uid != geteuid()) {
    what = "owned by uid " + std::to_string(st.st_uid);
  } else if (st.st_nlink != 1) {
    what = "a file with " + std::to_string(st.st_nlink) + " links";
  }
  if (what.empty()) return rs::Ok();
  return rs::Error(recovering + ": " + path + " is " + what +
                   ", not a file a recorder running as uid " + std::to_string(geteuid()) +
                   " made: refused (in a directory others write to it may have been planted)");
}

}  // namespace

bool ProcessAlive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

rs::Result<std::string> MakeWorkDir(const std::string& out_path) {
  std::string tmpl = Template(out_path, kTempMarker);
  if (mkdtemp(tmpl.data()) == nullptr) {
    return rs::Error(DirOf(out_path) +
                     ": cannot create the recording's working directory: " + std::strerror(errno));
  }
  return tmpl;
}

std::string WorkDirOf(const std::string& db_path) {
  if (BaseOf(db_path) != kWorkDbName) return "";
  const std::string dir = DirOf(db_path);
  return ParseTempName(BaseOf(dir)) && !EndsWith(dir, kOldDbSuffix) ? dir : "";
}

void RemoveDbFiles(const std::string& db_path) {
  unlink(db_path.c_str());
  for (const char* suffix : kJournalSuffixes) unlink((db_path + suffix).c_str());
  unlink((db_path + kReserveSuffix).c_str());
  if (const std::string dir = WorkDirOf(db_path); !dir.empty()) rmdir(dir.c_str());
}

rs::Result<PartialFile> CreatePartialBeside(const std::string& out) {
  PartialFile p;
  p.path = Template(out, kPartialMarker);
  // mkostemp: O_CREAT | O_EXCL, mode 0600; a name that exists (a planted link too) is
  // never opened, another is tried.
  p.fd = mkostemp(p.path.data(), O_CLOEXEC);
  if (p.fd < 0) {
    return rs::Error(out + ": cannot create the bundle's temporary file in " + DirOf(out) + ": " +
                     std::strerror(errno));
  }
  return p;
}

std::optional<pid_t> ParsePartialName(const std::string& name) {
  const size_t marker = name.rfind(kPartialMarker);
  if (name.size() < 2 || name[0] != '.' || marker == std::string::npos || marker < 2) {
    return std::nullopt;
  }
  return ParsePidAndRandom(name.substr(marker + std::strlen(kPartialMarker)));
}

std::optional<std::pair<std::string, pid_t>> ParseTempName(const std::string& file_name) {
  const std::string name = EndsWith(file_name, kOldDbSuffix)
                               ? file_name.substr(0, file_name.size() - std::strlen(kOldDbSuffix))
                               : file_name;
  if (name.size() < 2 || name[0] != '.') return std::nullopt;
  const size_t marker = name.rfind(kTempMarker);
  if (marker == std::string::npos || marker < 2) return std::nullopt;
  auto pid = ParsePidAndRandom(name.substr(marker + std::strlen(kTempMarker)));
  if (!pid) return std::nullopt;
  return std::make_pair(name.substr(1, marker - 1), *pid);
}

std::vector<LeftBehind> FindLeftBehind(const std::string& dir) {
  std::vector<LeftBehind> found;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return found;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) names.emplace_back(e->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());
  const std::string prefix = dir == "/" ? "/" : dir + "/";
  auto gone = [](pid_t pid) { return pid != getpid() && !ProcessAlive(pid); };
  for (const std::string& name : names) {
    struct stat st {};
    if (lstat((prefix + name).c_str(), &st) != 0 || st.st_uid != geteuid()) continue;
    if (auto pid = ParsePartialName(name); pid && S_ISREG(st.st_mode)) {
      if (gone(*pid)) unlink((prefix + name).c_str());  // half a bundle, never a whole one
      continue;
    }
    const bool reserve = EndsWith(name, kReserveSuffix);
    auto parsed =
        ParseTempName(reserve ? name.substr(0, name.size() - std::strlen(kReserveSuffix)) : name);
    if (!parsed || !gone(parsed->second)) continue;
    if (reserve) {
      if (S_ISREG(st.st_mode)) unlink((prefix + name).c_str());  // held space only
      continue;
    }
    std::string db = prefix + name;
    if (S_ISDIR(st.st_mode)) {
      if (EndsWith(name, kOldDbSuffix)) continue;
      db += std::string("/") + kWorkDbName;
      unlink((db + kReserveSuffix).c_str());
      if (lstat(db.c_str(), &st) != 0) {  // died before its database was made
        rmdir((prefix + name).c_str());
        continue;
      }
    } else if (!S_ISREG(st.st_mode) || !EndsWith(name, kOldDbSuffix)) {
      continue;
    }
    found.push_back({prefix + name, parsed->second, FileBytes(db)});
  }
  return found;
}

rs::Result<std::string> RecoverableDb(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return rs::Error(path + ": " + std::strerror(errno));
  std::string db = path;
  if (S_ISDIR(st.st_mode)) {
    if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
      return rs::Error(path + ": a working directory of uid " + std::to_string(st.st_uid) +
                       " with mode " + mode + ", not one a recorder running as uid " +
                       std::to_string(geteuid()) + " made (mode 700): refused");
    }
    db = (EndsWith(path, "/") ? path : path + "/") + kWorkDbName;
  } else if (S_ISLNK(st.st_mode)) {
    return rs::Error(path +
                     ": a symbolic link: give the recorder's working directory or "
                     "database itself");
  }
  RETURN_IF_ERROR(CheckOwnFile(db, path));
  for (const char* suffix : kJournalSuffixes) {
    const std::string j = db + suffix;
    if (lstat(j.c_str(), &st) == 0) RETURN_IF_ERROR(CheckOwnFile(j, path));
  }
  return db;
}

}  // namespace rs::rec
