// Always-on recording (--ring D): the working database keeps only the last D of events.
//
// Every event row's id comes from one allocator in the order rows are written, so "written
// before time T" is an id range: at each commit the loop marks the wall time and the last id
// written (Checkpoint), and Trim deletes the event rows of checkpoints older than the window
// by rowid range (no index needed, no table scan), then older ones still while the rows take
// more than --ring-size. What is deleted is counted per table and stated in every cut.
//
// A cut is an ordinary bundle of what the ring holds: the live database is copied with
// VACUUM INTO (committed rows only), the copy gets the cut's metadata and an end clock
// reference, and becomes CUT_DIR/CUT-ID/NODE.rsb.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "recorder/cut_dir.h"
#include "recorder/ring_dir_claim.h"
#include "rscore/clock.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::rec {

// The event table each source writes (its rows are what sources.events counts).
std::string_view EventTableOf(std::string_view source);

class Ring {
 public:
  Ring(int64_t window_ns, uint64_t max_bytes, uint32_t id_key)
      : window_ns_(window_ns), max_bytes_(max_bytes), id_key_(id_key) {}

  // Every row with an id counter up to `counter` was written by wall time `wall_ns`.
  void Checkpoint(int64_t wall_ns, uint32_t counter);
  // Deletes the rows written before now - window, then the oldest while the database's rows
  // take more than the size cap (always keeping the newest checkpoint's rows). Call inside a
  // transaction.
  rs::Result<void> Trim(rs::Db& db, int64_t now_wall_ns);

  int64_t window_ns() const { return window_ns_; }
  uint64_t max_bytes() const { return max_bytes_; }
  // The wall time since which the ring holds every row (the recording's start until the
  // first trim).
  std::optional<int64_t> held_since_ns() const { return held_since_ns_; }
  // Rows deleted per event table: for the window / for the size cap.
  uint64_t aged_out(std::string_view table) const;
  uint64_t aged_out_total() const;
  uint64_t size_dropped_total() const;

 private:
  struct Mark {
    int64_t wall_ns;
    uint32_t counter;
  };
  rs::Result<void> DeleteUpTo(rs::Db& db, uint32_t counter, bool for_size);

  int64_t window_ns_;
  uint64_t max_bytes_;
  uint32_t id_key_;
  std::deque<Mark> marks_;
  uint32_t deleted_up_to_ = 0;  // id counter of the last row deleted
  std::optional<int64_t> held_since_ns_;
  std::map<std::string, uint64_t, std::less<>> aged_out_;
  uint64_t aged_out_total_ = 0, size_dropped_total_ = 0;
};

// --cut-on-slowdown FRACTION: the node's collective rate (NCCL calls and the plugin's device
// operations recorded per second) over the last window against the median of its recent
// windows. Fires once when it falls below FRACTION of that median, again only after it came
// back above it.
class SlowdownWatch {
 public:
  static constexpr int64_t kWindowNs = int64_t{10} * 1'000'000'000;
  static constexpr size_t kHistory = 30;    // the windows the median is taken over (5 min)
  static constexpr size_t kMinHistory = 6;  // windows needed before anything is judged
  explicit SlowdownWatch(double fraction) : fraction_(fraction) {}
  // `ops`: the operations recorded since the start, read at `now_ns`; true: cut now.
  bool Feed(int64_t now_ns, uint64_t ops);
  // The last judged window's rate and the median it was held against (ops per window).
  uint64_t last_window_ops() const { return last_; }
  uint64_t median_ops() const { return median_; }

 private:
  double fraction_;
  std::deque<uint64_t> windows_;  // ops per closed window, oldest first
  int64_t window_start_ns_ = 0;
  uint64_t ops_at_window_start_ = 0;
  bool armed_ = true;
  uint64_t last_ = 0, median_ = 0;
};

// Answers to other nodes' cut requests: at most kMaxCuts within any kWindowNs. A cut copies
// the whole ring; a flood of requests (a peer gone wrong) would otherwise fill the disk with
// copies and rotate the cut of a real incident away.
class PostedCutLimit {
 public:
  static constexpr size_t kMaxCuts = 4;
  static constexpr int64_t kWindowNs = int64_t{10} * 60 * 1'000'000'000;
  // True (and counted) when a cut may be made at `now_ns`.
  bool Allow(int64_t now_ns);

 private:
  std::deque<int64_t> cuts_ns_;
};

// Writes the metadata of a cut into `db` (the copy, or the live database at a stop cut).
rs::Result<void> WriteCutMetadata(rs::Db& db, const CutInfo& info, const Ring& ring);

// Cuts the live database (outside a transaction): a copy with the cut's metadata and `end`
// as its end clock reference, compressed to CutPath(). Returns the bundle's path.
rs::Result<std::string> WriteCut(rs::Db& live, const std::string& cut_dir, const CutInfo& info,
                                 const Ring& ring, const rs::ClockRef& end);

}  // namespace rs::rec
