#include "recorder/trusted_dir.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace rs::rec {
namespace {

std::string Mode(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

constexpr const char kWhy[] =
    "the recorder runs as root and writes only where no other user can swap its files for "
    "links to files of their choice";

// One directory of the path: `is_target` for the directory itself, else one above it.
rs::Result<void> CheckOne(const std::string& path, bool is_target, DirUse use,
                          const std::string& what, const std::string& dir, uid_t self) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    return rs::Error(what + " " + dir + ": " + path + ": " + std::strerror(errno));
  }
  const std::string where = path == dir ? path : path + " (above " + dir + ")";
  if (S_ISLNK(st.st_mode)) {  // realpath resolved them all: one appeared since
    return rs::Error(what + " " + dir + ": " + where +
                     " changed into a symbolic link while it "
                     "was checked; " +
                     kWhy);
  }
  if (!S_ISDIR(st.st_mode)) return rs::Error(what + " " + dir + ": " + where + ": not a directory");
  if (st.st_uid != 0 && st.st_uid != self) {
    return rs::Error(what + " " + dir + ": " + where + " is owned by uid " +
                     std::to_string(st.st_uid) + ", not by root" +
                     (self != 0 ? " or uid " + std::to_string(self) : std::string()) + ": " + kWhy +
                     "; give a directory root owns (e.g. install -d -m 0700 -o root "
                     "/var/lib/rankscope/DIR)");
  }
  const bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  const bool sticky = (st.st_mode & S_ISVTX) != 0;
  if (!others_write) return rs::Ok();
  if (is_target && use == DirUse::kPrivate) {
    return rs::Error(what + " " + dir + ": " + where + " is writable by " +
                     ((st.st_mode & S_IWOTH) ? "others" : "its group") + " (mode " +
                     Mode(st.st_mode) + "): the recorder reads what is in it (cut requests, " +
                     "its pid file) as its own; make it private: chmod go-w " + path);
  }
  if (sticky) return rs::Ok();
  return rs::Error(what + " " + dir + ": " + where + " is writable by " +
                   ((st.st_mode & S_IWOTH) ? "others" : "its group") + " (mode " +
                   Mode(st.st_mode) + ") without the sticky bit: " + kWhy +
                   "; use a directory only root can write (chmod go-w " + path +
                   "), or one with the sticky bit such as /var/tmp");
}

}  // namespace

rs::Result<std::string> TrustedDir(const std::string& dir, DirUse use, const std::string& what,
                                   uid_t self) {
  std::unique_ptr<char, decltype(&free)> real(realpath(dir.c_str(), nullptr), &free);
  if (!real) return rs::Error(what + " " + dir + ": " + std::strerror(errno));
  const std::string resolved = real.get();
  // "/", "/a", "/a/b", ... down to the directory itself.
  std::vector<std::string> prefixes{"/"};
  for (size_t i = 1; resolved != "/" && i <= resolved.size(); ++i) {
    if (i == resolved.size() || resolved[i] == '/') prefixes.push_back(resolved.substr(0, i));
  }
  for (size_t i = 0; i < prefixes.size(); ++i) {
    RETURN_IF_ERROR(CheckOne(prefixes[i], i + 1 == prefixes.size(), use, what, dir, self));
  }
  return resolved;
}

}  // namespace rs::rec
