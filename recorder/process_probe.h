// Process exec / exit (table process_events). Every exec is also handed to the other probes
// (Probe::OnProcessExec) through RecorderContext::exec_pids.
#pragma once

#include <span>
#include <string>

#include "process.h"
#include "recorder/kernel_probe.h"

namespace rec {

// task->exit_code (a wait status) -> the exit code a shell shows: the status of a normal
// exit, 128 + signal number for a process killed by a signal.
int ExitCodeFromWaitStatus(int32_t status);

class ProcessEventWriter {
 public:
  static rs::Result<ProcessEventWriter> Create(rs::Db& db, std::string node,
                                               rs::EventIdAllocator* ids,
                                               const rs::MonoToWall* clock);
  // Returns the decoded event (the probe fans execs out).
  rs::Result<rs_process_event> Write(std::span<const uint8_t> data);

 private:
  rs::Statement insert_;
  std::string node_;
  rs::EventIdAllocator* ids_ = nullptr;
  const rs::MonoToWall* clock_ = nullptr;
};

class ProcessProbe : public KernelProbe {
 public:
  std::string_view source() const override { return "process"; }
  rs::Result<void> Start(RecorderContext& ctx) override;
  rs::Result<void> Finish(RecorderContext& ctx) override { return FinishKernel(ctx); }

 protected:
  rs::Result<void> OnSample(std::span<const uint8_t> data) override;

 private:
  ProcessEventWriter writer_;
};

}  // namespace rec
