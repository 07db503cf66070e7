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

#include "rscore/clock.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rec {

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
  static constexpr size_t kHistory = 30;     // the windows the median is taken over (5 min)
  static constexpr size_t kMinHistory = 6;   // windows needed before anything is judged
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

// What a cut says about itself (metadata cut_*).
struct CutInfo {
  std::string reason;  // request, stop, recovered
  std::string node;
  int64_t cut_ns = 0;  // wall time of the cut
  int64_t recording_start_ns = 0;
  // A cut asked for through the cut directory: its id (CUT-ID), who asked and when.
  std::string cut_id;
  std::string requested_by;
  int64_t requested_ns = 0;
  // Writing had stopped (a full disk): the cut holds what was committed until then.
  int64_t writing_stopped_ns = 0;
  std::string writing_stopped_reason;
};

// CUT_DIR/CUT-ID/NODE.rsb. CUT-ID is the request's, else the UTC time of the cut and its
// reason (20261125T174502Z-request): the cuts of one request on every node share a directory.
std::string CutPath(const std::string& cut_dir, const CutInfo& info);

// A cluster-wide cut goes through the cut directory (a shared file system: no service, no
// port): the node that cuts writes CUT_DIR/CUT-ID/request (its node, the wall time, the
// reason); every recorder watching the directory answers each request newer than its own
// start with a cut of its ring into the same CUT-ID directory.
struct CutRequest {
  std::string cut_id, node, reason;
  int64_t cut_ns = 0;
};
// Posts a request, or joins one posted within `join_ns` of `cut_ns` (overlapping windows make
// one cut): returns the request this cut answers.
rs::Result<CutRequest> PostCutRequest(const std::string& cut_dir, const std::string& node,
                                      int64_t cut_ns, const std::string& reason, int64_t join_ns);
// Requests in `cut_dir` posted at or after `since_ns` that `node` has not answered (no
// NODE.rsb in their directory), oldest first.
std::vector<CutRequest> PendingCutRequests(const std::string& cut_dir, const std::string& node,
                                           int64_t since_ns);

// Writes the metadata of a cut into `db` (the copy, or the live database at a stop cut).
rs::Result<void> WriteCutMetadata(rs::Db& db, const CutInfo& info, const Ring& ring);

// Cuts the live database (outside a transaction): a copy with the cut's metadata and `end`
// as its end clock reference, compressed to CutPath(). Returns the bundle's path.
rs::Result<std::string> WriteCut(rs::Db& live, const std::string& cut_dir, const CutInfo& info,
                                 const Ring& ring, const rs::ClockRef& end);

// Removes `node`'s oldest cuts (CUT_DIR/*/NODE.rsb, by CUT-ID: its UTC time comes first)
// while they take more than `max_bytes` together, and a cut directory left without bundles;
// never the newest. Returns the bundles removed.
std::vector<std::string> RotateCuts(const std::string& cut_dir, const std::string& node,
                                    uint64_t max_bytes);

// What a cut of `node` leaves when its recorder dies while writing it (SIGKILL, power): the
// copy of the ring (CUT_DIR/CUT-ID/.NODE.cut-PID.db and its journal) of a recorder no longer
// running, and the half-written bundle (NODE.rsb.partial: only NODE's recorder writes it, one
// per ring directory, which the caller has claimed). Removes them and returns their paths.
std::vector<std::string> RemoveStaleCutFiles(const std::string& cut_dir, const std::string& node);

// mkdir -p, mode 0700 (cuts hold what ran on the node).
rs::Result<void> MakeDirs(const std::string& dir);

// --ring-dir/recorder.pid: one recorder per ring directory; `rankscope-record cut` reads it.
std::string PidFilePath(const std::string& ring_dir);
// Writes our pid; refuses when a live recorder holds the directory.
rs::Result<void> ClaimRingDir(const std::string& ring_dir);
void ReleaseRingDir(const std::string& ring_dir);
// --ring-dir/cuts.log: one line per cut written (its path), appended by the recorder.
std::string CutLogPath(const std::string& ring_dir);
void AppendCutLog(const std::string& ring_dir, const std::string& line);

// `rankscope-record cut`: asks the recorder of `ring_dir` for a cut (SIGUSR1) and waits for
// it to be written; returns the bundle's path.
rs::Result<std::string> RequestCut(const std::string& ring_dir, int64_t timeout_ns);

}  // namespace rec
