// The recording loop: starts every probe, polls the shared ring buffer, writes rows in batch
// transactions, takes clock references, and always finalizes a valid bundle at the end
// (duration over, SIGINT or SIGTERM).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "recorder/options.h"
#include "recorder/probe.h"
#include "recorder/recording_db.h"
#include "rscore/identity.h"
#include "rscore/result.h"

namespace rs::rec {

// Installs SIGINT / SIGTERM handlers that ask the loop to stop (the bundle is finalized).
void InstallStopSignalHandlers();
// Asks a running loop to stop, as a signal does.
void RequestStop(int signo);

struct SourceSummary {
  std::string source, method, note;
  uint64_t events = 0, drops = 0;
};

struct RecordingSummary {
  std::string recording_id;
  int64_t start_ns = 0, end_ns = 0;
  uint64_t events = 0, drops = 0;
  std::vector<SourceSummary> sources;
  std::string stop_reason;  // 'duration' | 'SIGINT' | 'SIGTERM'
  // Writing stopped before the end (a full disk): when, why ('no_space' | 'write_error'), and
  // how many events were not written for it (included in `drops`).
  int64_t writing_stopped_ns = 0;
  std::string unwritten_reason;
  uint64_t unwritten = 0;
};

struct LoopConfig {
  int poll_timeout_ms = 50;
  int64_t tick_period_ns = 100'000'000;         // Probe::Tick
  int64_t clock_ref_period_ns = 1'000'000'000;  // periodic clock references
  // Batch transactions: a commit at least this often, or after this many rows (checked after
  // each round of writes). A recorder that dies loses what was written since the last one.
  int64_t commit_period_ns = 200'000'000;
  uint64_t commit_rows = 10'000;
  std::string proc_root = "/proc";
  // Runs once every probe has started, before recording goes on (still on one thread: the
  // ring drain thread starts after it).
  std::function<void()> after_start;
  // Runs once the probes are drained, before the end is written and the bundle made (--serve
  // stops its server there: the database is about to leave WAL mode and be compressed).
  std::function<void()> before_end;
};

class EventLoop {
 public:
  EventLoop(const RecorderOptions& opts, rs::NodeName node, RecordingDb writer,
            std::vector<std::unique_ptr<Probe>> probes, LoopConfig config = {});
  // Records until the duration ends or a stop is requested, then finalizes the bundle.
  // A full disk stops the writing, not the recording (see RecordingSummary::unwritten).
  // An error means no bundle was produced: before recording began the temporary database is
  // removed; after, it is kept and the error names the --recover command.
  rs::Result<RecordingSummary> Run();
  const RecordingDb& writer() const { return writer_; }

 private:
  rs::Result<RecordingSummary> Record();

  const RecorderOptions& opts_;
  rs::NodeName node_;
  RecordingDb writer_;
  bool recording_began_ = false;
  std::vector<std::unique_ptr<Probe>> probes_;
  LoopConfig config_;
};

}  // namespace rs::rec
