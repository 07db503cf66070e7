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
#include "rscore/bundle.h"
#include "rscore/identity.h"
#include "rscore/result.h"

namespace rec {

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
};

struct LoopConfig {
  int poll_timeout_ms = 50;
  int64_t tick_period_ns = 100'000'000;         // Probe::Tick
  int64_t clock_ref_period_ns = 1'000'000'000;  // periodic clock references
  int64_t commit_period_ns = 200'000'000;       // batch transaction: commit at least this often
  uint64_t commit_rows = 10'000;                // ... or after this many rows
  std::string proc_root = "/proc";
  // Runs once every probe has started, before recording goes on (still on one thread: the
  // ring drain thread starts after it).
  std::function<void()> after_start;
};

class EventLoop {
 public:
  EventLoop(const RecorderOptions& opts, rs::NodeName node, rs::BundleWriter writer,
            std::vector<std::unique_ptr<Probe>> probes, LoopConfig config = {});
  // Records until the duration ends or a stop is requested, then finalizes the bundle.
  // An error means no bundle was produced (its temporary file is removed).
  rs::Result<RecordingSummary> Run();

 private:
  const RecorderOptions& opts_;
  rs::NodeName node_;
  rs::BundleWriter writer_;
  std::vector<std::unique_ptr<Probe>> probes_;
  LoopConfig config_;
};

}  // namespace rec
