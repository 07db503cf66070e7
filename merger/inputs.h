// The inputs of a merge: which files, whether each is a valid recording, and how it joins
// the others (duplicate recordings merged once, clashing node names disambiguated, event ids
// that would collide moved to a free recording key).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "rendezvous.h"
#include "rscore/bundle.h"
#include "rscore/result.h"

namespace merge {

// Files as given, directories replaced by their *.rsb files (sorted by name).
rs::Result<std::vector<std::string>> ExpandInputs(const std::vector<std::string>& args);

// Identifies the file version that was validated (re-checked when it is opened again).
struct FileStamp {
  int64_t size = -1, mtime_ns = -1, inode = -1;
  bool operator==(const FileStamp&) const = default;
};

struct Input {
  int input_id = 0;  // 1-based, in command-line order
  std::string file;
  std::string status;  // 'merged' | 'skipped' | 'duplicate'
  std::string reason;  // why skipped, or what was changed to merge it; empty when clean
  // Learned while validating (the decompressed copy is not kept: at most one per thread
  // exists at a time, so temporary space stays bounded by the largest inputs, not their sum).
  rs::BundleInfo info;
  FileStamp stamp;
  int64_t maxerror_ns = -1;        // see NodeMaxErrorNs
  RendezvousCollector rendezvous;  // this input's rendezvous calls, as node 0
  std::vector<std::pair<std::string, int64_t>> table_rows;  // rows per table (for duplicates)
  int duplicate_of = 0;  // input id of the same recording, for a duplicate
  std::string recording_id;
  std::string original_node;  // node name inside the bundle
  std::string node;           // node name in the merged db
  int64_t id_shift = 0;       // added to every event id of this input (0: ids kept)
};

// Opens and validates every file (zstd frame, SQLite integrity, versions, required metadata,
// identity) and decides how the valid ones are merged. Never fails as a whole: each bad file
// becomes a 'skipped' input with its reason. Notes go to `log`.
std::vector<Input> PlanInputs(const std::vector<std::string>& files, std::ostream& log);

// Opens a validated input again for copying (the zstd checksum is verified again while
// decompressing); an error when the file changed since it was validated.
rs::Result<rs::OpenedDb> ReopenInput(const Input& in);

}  // namespace merge
