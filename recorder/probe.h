// The recorder's probe interface. Each event family (tcp, sched, block, process, nccl, cuda)
// is one Probe: it owns its BPF skeleton, its ring buffer callbacks and its prepared
// INSERTs. The event loop (recorder/event_loop.cc) drives every probe through the same
// lifecycle, one step per call: Start (open -> configure -> load -> attach) -> poll -> Finish.
#pragma once

#include <bpf/libbpf.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rscore/clock.h"
#include "rscore/event_id.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::rec {

struct RecorderOptions;
class AttachLog;
class ProcessTable;
class ProcLibraryMaps;
class RingPoller;

// Everything a probe may use while recording. Owned by the event loop; valid from Start
// to Finish. All calls happen on the event-loop thread (no locking needed).
// A process replaced its image (exec), at mono_ns (CLOCK_MONOTONIC, as the probes' events).
struct ProcessExec {
  int pid = 0;
  uint64_t mono_ns = 0;
};

struct RecorderContext {
  rs::Db* db = nullptr;                   // the bundle's SQLite db (a batch transaction is open)
  std::string node;                       // node name written into every row
  rs::EventIdAllocator* ids = nullptr;    // node-namespaced event ids: ids->Next()
  const rs::MonoToWall* clock = nullptr;  // bpf_ktime_get_ns() -> wall clock: clock->Convert()
  const RecorderOptions* options = nullptr;
  uint64_t scope_netns = 0;           // --scope netns: the recorder's netns inode; 0 = host
  std::string proc_root = "/proc";    // injectable for tests
  std::string sys_root = "/sys";      // likewise (the rdma probe's sysfs)
  AttachLog* attach_log = nullptr;    // every attach success/failure goes here
  ProcessTable* processes = nullptr;  // traced processes (rows of the `processes` table)
  RingPoller* poller = nullptr;       // shared ring-buffer poller: poller->Add(map fd, callback)
  // Library paths mapped by each process, one /proc reading shared by the NCCL and CUDA
  // probes' rescans; null: each discovery reads /proc itself.
  ProcLibraryMaps* library_maps = nullptr;
  // Processes that exec'd since the loop last looked (filled by the process probe); the loop
  // hands each to every probe's OnProcessExec outside the ring-buffer callbacks.
  std::vector<ProcessExec> execs;
  // Recording is ending: the probes are being detached one after another, and a library
  // load reported meanwhile must not attach anything new.
  bool finishing = false;
  // A write failed and rolled the batch back (a full disk). The event loop counts every row
  // not committed as dropped for it; a probe counts a row whose insert fails from then on as
  // handed over (events()), not as an error of its own, and does not log it.
  bool writes_failed = false;
};

// Prepares INSERT INTO `table`(`columns`) VALUES (?, ...) with one placeholder per column of
// the comma-separated `columns`, so that the two cannot disagree; the row's values are bound
// by their 1-based position in `columns`.
inline rs::Result<rs::Statement> PrepareInsert(rs::Db& db, std::string_view table,
                                               std::string_view columns) {
  std::string placeholders = "?";
  for (char c : columns) {
    if (c == ',') placeholders += ", ?";
  }
  return db.Prepare("INSERT INTO " + std::string(table) + "(" + std::string(columns) +
                    ") VALUES (" + placeholders + ")");
}

class Probe {
 public:
  virtual ~Probe() = default;
  // Value of sources.source and prefix of log lines: 'tcp', 'sched', 'nccl', ...
  virtual std::string_view source() const = 0;
  // open -> configure -> load -> attach; adds its ring buffer(s) to ctx.poller. An error here
  // means this source records nothing (the loop logs it and stores it in `sources.note`);
  // optional parts that fail are logged to ctx.attach_log and do not fail Start.
  virtual rs::Result<void> Start(RecorderContext& ctx) = 0;
  // Called about every 100 ms from the loop (periodic summaries, library re-scans).
  virtual void Tick(RecorderContext& /*ctx*/) {}
  // A process was exec'd (from the process probe) or newly chosen for tracing.
  // The exec's monotonic time tells the new image's events (they may be decoded before the
  // loop hands the exec on: the rings are read in no order among them) from the old one's.
  virtual void OnProcessExec(RecorderContext& /*ctx*/, const ProcessExec& /*exec*/) {}
  virtual void OnProcessTraced(RecorderContext& /*ctx*/, int /*pid*/) {}
  // Drain what is pending, write in-flight calls (state 'in_flight', duration NULL),
  // then detach. Must succeed as far as it can: the bundle is finalized afterwards.
  virtual rs::Result<void> Finish(RecorderContext& ctx) = 0;
  // Counters for the `sources` table.
  virtual std::string method() const = 0;  // 'tp_btf', 'tracepoint', 'uprobe', 'off'
  virtual uint64_t events() const = 0;     // rows written
  virtual uint64_t drops() const = 0;      // reserve failures + entries lost (per-CPU stats map)
  // sources.note of a source that started (e.g. why it recorded nothing); "" for none.
  virtual std::string note() const { return ""; }
  // Monotonic time (bpf_ktime_get_ns) the oldest call still in flight entered; none when no
  // call is (--cut-on-stall watches it).
  virtual std::optional<int64_t> OldestInFlightNs() const { return std::nullopt; }
  // A cut of the ring holds the calls in flight too: what the rings hold is written first (as
  // ever), then the calls in flight as rows (state 'in_flight') whose ids this returns; the
  // loop deletes them from the source's table after the copy and calls ForgetCutRows.
  struct CutRows {
    int64_t first_id = 0, last_id = 0;  // rows first_id..last_id of the source's table
    uint64_t rows = 0;
  };
  virtual CutRows WriteInFlightForCut(RecorderContext& /*ctx*/) { return {}; }
  virtual void ForgetCutRows(uint64_t /*rows*/) {}
  // A source --sources left out: its Start fails on purpose and loads nothing.
  virtual bool left_out() const { return false; }
};

}  // namespace rs::rec
