// The inputs of a merge: which files, whether each is a valid recording, and how it joins
// the others (duplicate recordings merged once, another cut of a merged recording skipped
// loudly, clashing node names disambiguated, event ids that would collide moved to a free
// recording key).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "merger/rendezvous.h"
#include "rscore/bundle.h"
#include "rscore/result.h"

namespace rs::merge {

// Files as given, directories replaced by their *.rsb files and Flight Recorder dumps
// (nccl_trace_rank_N: a pickle or JSON whose name ends in a rank), sorted by name.
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
  rs::ErrorKind reason_kind = rs::ErrorKind::kOther;  // of the error that skipped it
  // Learned while validating.
  rs::BundleInfo info;
  FileStamp stamp;
  int64_t maxerror_ns = -1;  // see NodeMaxErrorNs
  RendezvousCollector
      rendezvous;  // this input's records of rendezvous, as node 0 (moved out by the merge)
  std::vector<std::pair<std::string, int64_t>> table_rows;  // rows per table (for duplicates)
  int duplicate_of = 0;  // input id of the same recording, for a duplicate
  std::string recording_id;
  std::string original_node;  // node name inside the bundle
  std::string node;           // node name in the merged db
  int64_t id_shift = 0;       // added to every event id of this input (0: ids kept)
  // First recording key (event id >> 32) of this input's events in the merged db, after any
  // remapping; nullopt without events. Inputs copied in this order append to the merged
  // tables' b-trees instead of splitting pages in their middle.
  std::optional<int64_t> first_key;
  // The validated SQLite image (the decompressed bundle, in a temp file; its connection
  // closed), kept for copying so that no input is decompressed twice. Only merged inputs keep
  // one: temporary space is the sum of the merged inputs until each is copied and released.
  std::shared_ptr<rs::OpenedDb> image;
};

// Opens and validates every file (zstd frame, SQLite integrity, versions, required metadata,
// identity) and decides how the valid ones are merged. Never fails as a whole: each bad file
// becomes a 'skipped' input with its reason. Notes go to `log`.
std::vector<Input> PlanInputs(const std::vector<std::string>& files, std::ostream& log);

// The path of a validated input's SQLite image, for copying; an error when the file changed
// since it was validated (the image is what was validated, but a user who replaced a bundle
// mid-merge should rerun rather than get a mix of old and new files) or has no image.
rs::Result<std::string> ReopenInput(const Input& in);

}  // namespace rs::merge
