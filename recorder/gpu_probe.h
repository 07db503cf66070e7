// The gpu capture source: NCCL operations as the GPU ran them, from rankscope's NCCL profiler
// plugin (recorder/plugin/, ABI in gpu_ring.h) -> table gpu_ops. No BPF: inside each training
// process the plugin aggregates NCCL's profiler events into one record per operation in a
// shared-memory region; this probe only reads.
//  - Discovery: the processes whose /proc/PID/maps show the region (the readings the NCCL and
//    CUDA rescans share, ProcLibraryMaps; read here only when no rescan did), within --pid and
//    --scope netns; the region is opened through /proc/PID/fd (FindGpuRing) once per
//    (dev, ino): a forked child shares its parent's. Regions are untrusted (any user can make
//    one): a region not owned by its process's user, not sealed against shrinking, or of
//    another layout is refused (GpuRingReader::Open), one that changes as the plugin never
//    changes it is dropped (GpuRingView); either is logged once and counted by reason
//    (metadata gpu_regions_dropped_<reason>, and one drop of the source each), and recording
//    goes on.
//  - The heartbeat that tells the plugin a recorder reads (only then does it record operations
//    and ask NCCL for device-side events), from a thread of its own while the loop ticks
//    (gpu_heartbeat.h); every loop tick (never on the event path), the records finished since
//    the last tick, one gpu_ops row each.
//  - A region whose processes exited or exec'd, and every region at Finish: a last read, then
//    the operations still in flight (slots) as rows with their state. At Finish, comm_id_hash
//    from the same process's nccl_events with the same nccl_comm_hash, and the counters in
//    metadata (gpu_drops_<reason>, gpu_ops_unrecorded, gpu_ops_copy_engine, gpu_graph_calls,
//    gpu_graph_calls_unrecorded, gpu_graph_replay_ops, gpu_in_flight, gpu_regions).
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "recorder/gpu_decode.h"
#include "recorder/gpu_heartbeat.h"
#include "recorder/gpu_ring_reader.h"
#include "recorder/library_discovery.h"
#include "recorder/probe.h"
#include "rscore/sqlite.h"

namespace rs::rec {

// INSERT of one gpu_ops row (comm_id_hash NULL: FillGpuCommIdHash sets it at the end).
rs::Result<rs::Statement> PrepareGpuInsert(rs::Db& db);
rs::Result<void> WriteGpuRow(rs::Statement& st, const GpuOpRow& row, const std::string& node,
                             int64_t id, int pid, const rs::MonoToWall* clock);
// gpu_ops.comm_id_hash of `node` from nccl_events rows of the same node and pid whose
// nccl_comm_hash is the same (only where they name one comm_id_hash). Returns rows updated.
rs::Result<int64_t> FillGpuCommIdHash(rs::Db& db, const std::string& node);

class GpuProbe : public Probe {
 public:
  GpuProbe();
  ~GpuProbe() override;
  std::string_view source() const override { return "gpu"; }
  rs::Result<void> Start(RecorderContext& ctx) override;
  void Tick(RecorderContext& ctx) override;
  void OnProcessExec(RecorderContext& ctx, const ProcessExec& exec) override;
  void OnProcessTraced(RecorderContext& ctx, int pid) override;
  rs::Result<void> Finish(RecorderContext& ctx) override;
  std::string method() const override { return regions_read_ > 0 ? "plugin" : "off"; }
  std::string note() const override;
  uint64_t events() const override { return events_; }
  uint64_t drops() const override;
  // The oldest enqueue among the operations in the plugins' slots (enqueued or started, not
  // completed): on a GPU node, a hung collective is one of these, not a host call.
  std::optional<int64_t> OldestInFlightNs() const override;
  CutRows WriteInFlightForCut(RecorderContext& ctx) override;
  void ForgetCutRows(uint64_t rows) override { events_ -= std::min(rows, events_); }

  // Operations the plugin could not hand over, by reason (metadata gpu_drops_<reason>).
  struct Drops {
    uint64_t overrun = 0;      // the ring wrapped before the recorder read them
    uint64_t slots_full = 0;   // the plugin had no slot for the operation
    uint64_t late_event = 0;   // device events after the operation was written
    uint64_t undecodable = 0;  // records of an operation or state this recorder does not know
  };
  Drops drop_counts() const;
  // Operations the plugins counted as launched while no recorder read (not drops).
  uint64_t ops_unrecorded() const;
  // A counter of the plugins' headers (GpuRingCounters), summed over every region read.
  uint64_t Total(uint64_t GpuRingCounters::*counter) const;
  uint64_t regions_read() const { return regions_read_; }
  uint64_t regions_dropped() const;  // refused or dropped, every reason
  size_t open_regions() const { return regions_.size(); }

  // How long a region that cannot be opened is retried before the failure is logged (the
  // plugin may still be writing its header).
  static constexpr int64_t kOpenGraceMs = 1000;

 private:
  using Key = std::pair<uint64_t, uint64_t>;  // (dev, ino) of the memfd
  struct Region {
    explicit Region(GpuRingReader r) : reader(std::move(r)) {}
    GpuRingReader reader;
    int pid = 0;           // its rows' pid: the process that created it, as the host sees it
    bool creator = false;  // pid is known to be the creator (else: the first process seen)
    std::set<int> pids;    // processes seen mapping it
    uint64_t slots_full_at_open = 0, late_event_at_open = 0;
    bool api_written = false;
  };
  struct Failure {
    int64_t first_ms = 0;
    std::string error;
    std::optional<GpuRegionFault> fault;  // the region was refused (else: gone, no permission)
  };

  void Discover(RecorderContext& ctx, int64_t now_ms);
  void Consider(RecorderContext& ctx, int pid, int64_t now_ms);
  void Failed(RecorderContext& ctx, int pid, int64_t now_ms, const std::string& error,
              std::optional<GpuRegionFault> fault = std::nullopt);
  void LogFailure(RecorderContext& ctx, int pid, const Failure& f);
  void Read(RecorderContext& ctx);  // discovery, then ReadAll
  void ReadAll(RecorderContext& ctx, int64_t now_ms);
  // Reads the records written since the last read into rows; returns them.
  std::vector<rs_gpu_op> Drain(RecorderContext& ctx, Region& r);
  void Close(RecorderContext& ctx, const Key& key);
  void Drop(const Key& key);
  void Forget(std::map<Key, std::unique_ptr<Region>>::iterator it);
  void Write(RecorderContext& ctx, const Region& r, const rs_gpu_op& op);
  bool Selected(RecorderContext& ctx, int pid) const;

  bool enabled_ = true;
  GpuHeartbeat beat_;                          // beats every open region's reader (its own thread)
  std::unique_ptr<ProcLibraryMaps> own_maps_;  // when the context has no shared one
  rs::Statement insert_;
  std::map<Key, std::unique_ptr<Region>> regions_;
  std::map<int, Key> pid_region_;
  std::map<int, int64_t> retry_at_ms_;  // pid -> when to look at its fds again
  std::map<int, Failure> failures_;     // not opened yet, within the grace
  std::set<int> given_up_;              // failure logged: not retried
  int64_t next_pid_scan_ms_ = 0;
  int64_t next_liveness_ms_ = 0;
  Drops closed_;                                        // of regions already closed
  uint64_t dropped_[std::size(kGpuRegionFaults)] = {};  // regions not read, by GpuRegionFault
  GpuRingCounters closed_counters_;  // regions already closed: as of their last intact read
  // Records of a startup window (gpu_ring.h) that ended before the recording started: not
  // written, counted with the operations launched while no recorder read.
  uint64_t before_start_ = 0;
  int64_t start_ns_ = 0;  // the recording's start, CLOCK_MONOTONIC
  uint64_t regions_read_ = 0;
  uint64_t in_flight_ = 0;
  uint64_t device_times_backwards_ = 0;  // rows whose device times ran backwards (NULL)
  uint64_t proxy_times_partial_ = 0;     // rows with proxy steps untimed (sums: lower bounds)
  uint64_t events_ = 0;
  uint64_t write_errors_ = 0;
  std::string first_error_;
  bool started_ = false, finished_ = false;
};

std::unique_ptr<Probe> MakeGpuProbe(const RecorderOptions& opts);

}  // namespace rs::rec
