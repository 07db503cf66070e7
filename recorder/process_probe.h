// Process exec / exit (table process_events). Every exec is also handed to the other probes
// (Probe::OnProcessExec) through RecorderContext::execs.
#pragma once

#include <span>
#include <string>

#include "bpf/abi/process.h"
#include "recorder/kernel_probe.h"

namespace rs::rec {

// task->exit_code (a wait status) -> the exit code a shell shows: the status of a normal
// exit, 128 + signal number for a process killed by a signal.
int ExitCodeFromWaitStatus(int32_t status);

// event bytes -> process_events row.
class ProcessEventWriter : public KernelEventWriter<ProcessEventWriter> {
 public:
  static const char kInsertSql[];
  // Returns the decoded event (the probe fans execs out).
  rs::Result<rs_process_event> Write(std::span<const uint8_t> data);
};

class ProcessProbe : public KernelProbe {
 public:
  std::string_view source() const override { return "process"; }
  rs::Result<void> Start(RecorderContext& ctx) override;

 protected:
  rs::Result<void> OnSample(std::span<const uint8_t> data) override;

 private:
  ProcessEventWriter writer_;
};

}  // namespace rs::rec
