// Scheduler: off-CPU intervals and run-queue latency of traced processes (sched_events), and
// per-CPU aggregates of everything else (sched_summary, about once a second).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bpf/abi/sched.h"
#include "recorder/kernel_probe.h"

namespace rs::rec {

// event bytes -> sched_events row.
class SchedEventWriter : public KernelEventWriter<SchedEventWriter> {
 public:
  static const char kInsertSql[];
  rs::Result<void> Write(std::span<const uint8_t> data);
};

// One CPU's cumulative counters at one moment (the BPF map values plus the max since the
// last read).
struct SchedCpuSample {
  uint64_t switches = 0, runq_count = 0, runq_total_ns = 0, runq_max_ns = 0;
};

// Turns two successive cumulative readings into sched_summary rows (one per CPU).
class SchedSummaryWriter {
 public:
  static rs::Result<SchedSummaryWriter> Create(rs::Db& db, std::string node);
  // `prev` empty: the first reading, only remembered. Returns rows written.
  rs::Result<int> Write(int64_t wall_ns, int64_t interval_ns,
                        const std::vector<SchedCpuSample>& prev,
                        const std::vector<SchedCpuSample>& now);

 private:
  rs::Statement insert_;
  std::string node_;
};

class SchedProbe : public KernelProbe {
 public:
  std::string_view source() const override { return "sched"; }
  rs::Result<void> Start(RecorderContext& ctx) override;
  void Tick(RecorderContext& ctx) override;
  void OnProcessTraced(RecorderContext& ctx, int pid) override;
  rs::Result<void> Finish(RecorderContext& ctx) override;

  // Shortest interval stored as an event (shorter ones are not emitted).
  static constexpr uint64_t kMinIntervalNs = 10'000;
  static constexpr int64_t kSummaryPeriodNs = 1'000'000'000;

 protected:
  rs::Result<void> OnSample(std::span<const uint8_t> data) override { return writer_.Write(data); }

 private:
  rs::Result<std::vector<SchedCpuSample>> ReadCpuStats();
  rs::Result<void> Summarize(RecorderContext& ctx);

  SchedEventWriter writer_;
  SchedSummaryWriter summary_;
  int traced_fd_ = -1, cpu_stats_fd_ = -1, runq_max_fd_ = -1;
  std::vector<SchedCpuSample> last_;
  int64_t last_mono_ns_ = 0;
  bool summary_error_logged_ = false;
};

}  // namespace rs::rec
