// Drives the real rankscope-record binary from kernel tests: start (optionally inside a
// network namespace), wait until it is recording, stop it with a signal, read the bundle.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rscore/bundle.h"
#include "rscore/result.h"

namespace rs::rec::ktest {

// Path of the binary under test: $RANKSCOPE_RECORD (set by meson).
std::string RecorderPath();

// Runs a shell command; returns its exit status (stdout/stderr go to the test log).
int Sh(const std::string& cmd);
// Runs a shell command and returns its stdout (trailing newline removed).
std::string ShOut(const std::string& cmd);

// A unique scratch directory removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

class RecorderProcess {
 public:
  // `netns`: run inside `ip netns exec NETNS`.
  static rs::Result<RecorderProcess> Start(const std::vector<std::string>& args,
                                           const std::string& netns = "");
  RecorderProcess(RecorderProcess&&) noexcept;
  RecorderProcess& operator=(RecorderProcess&&) = delete;
  ~RecorderProcess();  // kills a recorder still running

  // Waits (up to timeout) for the "recording" line on stderr.
  bool WaitReady(int timeout_ms = 20000);
  // Waits (up to timeout) for `text` on stderr; false when it exits without it.
  bool WaitFor(const std::string& text, int timeout_ms);
  // Sends `signo` and waits for the exit; returns the exit status (-1 on timeout).
  int Stop(int signo, int timeout_ms = 20000);
  // Waits for exit without signalling.
  int Wait(int timeout_ms = 20000);
  const std::string& stderr_text() const { return err_; }
  pid_t pid() const { return pid_; }

 private:
  RecorderProcess() = default;
  void Drain(int timeout_ms);
  pid_t pid_ = -1;
  int err_fd_ = -1;
  std::string err_;
  int status_ = -1;
  bool exited_ = false;
};

// Runs the recorder to completion (e.g. with --duration or bad input).
struct RunResult {
  int exit_code = -1;
  std::string stderr_text;
};
RunResult RunRecorder(const std::vector<std::string>& args, int timeout_ms = 30000);

// Forks a child named `name`, pinned to `cpu`, that spins for at most `max_s` seconds.
// `round_robin`: SCHED_RR priority 1, so two such spinners on one CPU take turns with each
// other (100 ms slices) whatever else the machine runs (ordinary tasks cannot preempt them;
// the kernel's RT throttling still leaves them 5% of the CPU).
pid_t SpawnSpinner(int cpu, const char* name, int max_s, bool round_robin = false);
// Kills (SIGKILL) and reaps a child.
void Reap(pid_t pid);

// Opens a bundle and runs a single-integer query.
rs::Result<int64_t> QueryBundleInt(const std::string& bundle, const std::string& sql);

}  // namespace rs::rec::ktest
