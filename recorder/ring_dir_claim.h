// One recorder per ring directory, and how `rankscope-record cut` finds it.
//
// RING_DIR/recorder.pid holds the recorder's pid and its start time (field 22 of
// /proc/PID/stat, clock ticks since boot), and the recorder holds a write lock (fcntl) on it
// for as long as it runs: the kernel drops the lock when the process ends, however it ends.
// So a pid file is only believed while its lock is held, and the pid to signal is the lock
// holder's as the kernel reports it (F_GETLK), checked against the file and the process's
// start time, and signalled through a pidfd: a stale file whose pid now belongs to an
// unrelated process is neither signalled nor a reason to refuse a start.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "rscore/result.h"

namespace rs::rec {

std::string PidFilePath(const std::string& ring_dir);
// Locks and writes RING_DIR/recorder.pid; refuses when a running recorder holds it. The lock
// lasts until ReleaseRingDir (or the process's end).
rs::Result<void> ClaimRingDir(const std::string& ring_dir);
void ReleaseRingDir(const std::string& ring_dir);

// --ring-dir/cuts.log: one line per cut written (its path), appended by the recorder.
std::string CutLogPath(const std::string& ring_dir);
void AppendCutLog(const std::string& ring_dir, const std::string& line);

// `rankscope-record cut`: asks the recorder of `ring_dir` for a cut (SIGUSR1) and waits for
// it to be written; returns the bundle's path.
rs::Result<std::string> RequestCut(const std::string& ring_dir, int64_t timeout_ns);

// The start time of process `pid` (/proc/PID/stat field 22); nullopt when it is gone.
std::optional<uint64_t> ProcessStartTime(pid_t pid, const std::string& proc_root = "/proc");

}  // namespace rs::rec
