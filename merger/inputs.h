// The inputs of a merge: which files, whether each is a valid recording, and how it joins
// the others (duplicate recordings merged once, clashing node names disambiguated, event ids
// that would collide moved to a free recording key).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "rscore/bundle.h"
#include "rscore/result.h"

namespace merge {

// Files as given, directories replaced by their *.rsb files (sorted by name).
rs::Result<std::vector<std::string>> ExpandInputs(const std::vector<std::string>& args);

struct Input {
  int input_id = 0;  // 1-based, in command-line order
  std::string file;
  std::string status;  // 'merged' | 'skipped' | 'duplicate'
  std::string reason;  // why skipped, or what was changed to merge it; empty when clean
  std::optional<rs::OpenedDb> opened;  // kept open (and decompressed) while merging
  std::string recording_id;
  std::string original_node;  // node name inside the bundle
  std::string node;           // node name in the merged db
  int64_t id_shift = 0;       // added to every event id of this input (0: ids kept)
};

// Opens and validates every file (zstd frame, SQLite integrity, versions, required metadata,
// identity) and decides how the valid ones are merged. Never fails as a whole: each bad file
// becomes a 'skipped' input with its reason. Notes go to `log`.
std::vector<Input> PlanInputs(const std::vector<std::string>& files, std::ostream& log);

}  // namespace merge
