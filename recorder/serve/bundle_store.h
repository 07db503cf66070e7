// The bundles a node's server offers: every NODE.rsb under one directory (finished bundles,
// the always-on ring's cuts in CUT-ID/NODE.rsb), with each file's recording span and checksum
// read once per version of the file, and decompressed copies kept for queries.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rscore/bundle.h"
#include "rscore/fleet_wire.h"
#include "rscore/result.h"

namespace rs::serve {

class BundleStore {
 public:
  // `dir` empty: no bundles (a recorder that serves only its live recording).
  explicit BundleStore(std::string dir, size_t open_cache = 4)
      : dir_(std::move(dir)), open_cache_(open_cache) {}

  struct Listing {
    std::vector<rs::wire::BundleEntry> bundles;  // by name
    std::vector<std::string> skipped;            // "NAME: why" for files that are no bundle
  };
  // Reads the directory again: regular files named *.rsb, at most three levels down, not
  // hidden (the recorder's temporary files, partial downloads) and not through symbolic links.
  rs::Result<Listing> List();

  struct Located {
    rs::wire::BundleEntry entry;
    std::string path;
  };
  // A bundle of the last listing (listing again when it is not in it): never a path built
  // from `name`, so a name cannot reach outside the directory.
  rs::Result<Located> Find(const std::string& name);
  // The summary of a bundle of the last listing (rscore/summarize.h), made on the first call
  // for that version of the bundle into a private temporary file and kept while it is
  // unchanged: its entry has the bundle's name and span and the summary's size and checksum.
  rs::Result<Located> Summary(const std::string& name);
  // The name of the bundle with the latest end (the default a query reads).
  rs::Result<std::string> Newest();

  // The bundle decompressed and validated (rs::OpenRankscopeFile), shared by the queries that
  // read it until the file changes or the cache drops it.
  rs::Result<std::shared_ptr<rs::OpenedDb>> Open(const std::string& name);

  const std::string& dir() const { return dir_; }

 private:
  struct FileKey {
    dev_t dev = 0;
    ino_t ino = 0;
    int64_t size = 0, mtime_ns = 0;
    bool operator==(const FileKey&) const = default;
  };
  struct Known {
    FileKey key;
    rs::wire::BundleEntry entry;
    std::string path;
    std::string error;  // not a bundle: why
  };
  void Scan(const std::string& rel, int depth, std::map<std::string, Known>& seen);
  // The version of a bundle of the last listing (an error if it went away since).
  rs::Result<FileKey> KeyOf(const std::string& name);

  std::string dir_;
  size_t open_cache_;
  std::mutex mu_;
  std::map<std::string, Known> known_;  // name -> what it was at the last listing
  struct OpenEntry {
    std::string name;
    FileKey key;
    std::shared_ptr<rs::OpenedDb> db;
  };
  std::list<OpenEntry> opened_;  // most recently used first
  std::mutex open_mu_;
  struct SummaryEntry {
    FileKey key;
    rs::wire::BundleEntry entry;
    rs::TempFile file;
  };
  std::map<std::string, SummaryEntry> summaries_;  // bundle name -> its summary
  std::mutex summary_mu_;  // held while one is made: a second request for it waits
};

}  // namespace rs::serve
