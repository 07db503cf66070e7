#include "recorder/serve/bundle_store.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rscore/file_checksum.h"
#include "rscore/output.h"
#include "rscore/summarize.h"

namespace rs::serve {
namespace {

bool EndsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

void BundleStore::Scan(const std::string& rel, int depth, std::map<std::string, Known>& seen) {
  const std::string path = rel.empty() ? dir_ : dir_ + "/" + rel;
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  }
  closedir(d);
  for (const std::string& n : names) {
    const std::string child_rel = rel.empty() ? n : rel + "/" + n;
    const std::string child = dir_ + "/" + child_rel;
    struct stat st {};
    if (lstat(child.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (depth < 3) Scan(child_rel, depth + 1, seen);
      continue;
    }
    if (!S_ISREG(st.st_mode) || !EndsWith(n, ".rsb")) continue;
    FileKey key{st.st_dev, st.st_ino, static_cast<int64_t>(st.st_size),
                static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
    auto it = known_.find(child_rel);
    if (it != known_.end() && it->second.key == key) {
      seen.emplace(child_rel, it->second);
      continue;
    }
    Known k;
    k.key = key;
    k.path = child;
    k.entry.name = child_rel;
    k.entry.bytes = key.size;
    auto opened = rs::OpenRankscopeFile(child, /*check_integrity=*/false);
    if (!opened.ok()) {
      k.error = opened.error().message();
    } else {
      const rs::BundleInfo& info = opened->info();
      k.entry.node = info.node;
      k.entry.start_ns = info.start_ns;
      k.entry.end_ns = info.end_ns;
      k.entry.kind = info.metadata.count("cut_id") ? "cut" : "bundle";
      auto sum = rs::FileXxh64(child);
      if (sum.ok()) {
        k.entry.xxh64 = *sum;
      } else {
        k.error = sum.error().message();
      }
      if (info.db_kind != "bundle") k.error = child_rel + ": a " + info.db_kind + " database";
    }
    seen.emplace(child_rel, std::move(k));
  }
}

rs::Result<BundleStore::Listing> BundleStore::List() {
  Listing out;
  if (dir_.empty()) return out;
  std::lock_guard<std::mutex> lock(mu_);
  struct stat st {};
  if (stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return rs::Error(
        dir_ + ": not a directory that can be read: " + std::strerror(errno ? errno : ENOTDIR));
  }
  std::map<std::string, Known> seen;
  Scan("", 0, seen);
  known_ = std::move(seen);
  for (const auto& [name, k] : known_) {
    if (k.error.empty()) {
      out.bundles.push_back(k.entry);
    } else {
      out.skipped.push_back(name + ": " + k.error);
    }
  }
  return out;
}

rs::Result<BundleStore::Located> BundleStore::Find(const std::string& name) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = known_.find(name);
      if (it != known_.end() && it->second.error.empty()) {
        return Located{it->second.entry, it->second.path};
      }
    }
    if (attempt == 0) RETURN_IF_ERROR(List());
  }
  return rs::Error("no bundle '" + name + "' here (GET /v1/bundles lists them)");
}

rs::Result<std::string> BundleStore::Newest() {
  ASSIGN_OR_RETURN(Listing l, List());
  if (l.bundles.empty()) {
    return rs::Error(dir_.empty() ? "this node serves no bundles"
                                  : "no bundle in " + dir_ + " to query");
  }
  auto newest =
      std::max_element(l.bundles.begin(), l.bundles.end(),
                       [](const rs::wire::BundleEntry& a, const rs::wire::BundleEntry& b) {
                         return a.end_ns < b.end_ns || (a.end_ns == b.end_ns && a.name < b.name);
                       });
  return newest->name;
}

rs::Result<BundleStore::FileKey> BundleStore::KeyOf(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = known_.find(name);
  if (it == known_.end()) return rs::Error("bundle '" + name + "' went away meanwhile");
  return it->second.key;
}

rs::Result<std::shared_ptr<rs::OpenedDb>> BundleStore::Open(const std::string& name) {
  ASSIGN_OR_RETURN(Located loc, Find(name));
  ASSIGN_OR_RETURN(const FileKey key, KeyOf(name));
  std::lock_guard<std::mutex> lock(open_mu_);
  for (auto it = opened_.begin(); it != opened_.end(); ++it) {
    if (it->name == name && it->key == key) {
      opened_.splice(opened_.begin(), opened_, it);
      return opened_.front().db;
    }
  }
  auto opened = rs::OpenRankscopeFile(loc.path);
  if (!opened.ok()) return opened.error();
  auto db = std::make_shared<rs::OpenedDb>(std::move(opened).value());
  opened_.remove_if([&](const OpenEntry& e) { return e.name == name; });
  opened_.push_front({name, key, db});
  while (opened_.size() > open_cache_) opened_.pop_back();
  return db;
}

rs::Result<BundleStore::Located> BundleStore::Summary(const std::string& name) {
  ASSIGN_OR_RETURN(Located loc, Find(name));
  ASSIGN_OR_RETURN(const FileKey key, KeyOf(name));
  std::lock_guard<std::mutex> lock(summary_mu_);
  auto it = summaries_.find(name);
  if (it != summaries_.end() && it->second.key == key) {
    return Located{it->second.entry, it->second.file.path()};
  }
  ASSIGN_OR_RETURN(rs::TempFile file, rs::TempFile::Create("", "summary.rss"));
  ASSIGN_OR_RETURN(rs::OutputTarget target, rs::CheckOutput(file.path(), true, {loc.path}));
  auto made = rs::Summarize(loc.path, target);
  if (!made.ok()) return rs::Error(name + ": cannot summarize: " + made.error().message());
  rs::wire::BundleEntry entry = loc.entry;
  entry.bytes = made->summary_bytes;
  ASSIGN_OR_RETURN(entry.xxh64, rs::FileXxh64(file.path()));
  SummaryEntry& kept = summaries_[name];
  kept = SummaryEntry{key, entry, std::move(file)};
  return Located{kept.entry, kept.file.path()};
}

}  // namespace rs::serve
