// Checks made before anything is loaded into the kernel, each failing with one line that
// names the problem and what to do.
#pragma once

#include <sys/types.h>
#include <string>

#include "rscore/result.h"

namespace rs::rec {

inline constexpr char kKernelBtfPath[] = "/sys/kernel/btf/vmlinux";

rs::Result<void> CheckRoot(uid_t euid);
// The kernel's own BTF (CO-RE relocations and tp_btf need it).
rs::Result<void> CheckKernelBtf(const std::string& path = kKernelBtfPath);

// Classic tracepoints (every kernel probe's fallback, and the library-load reports on
// syscalls/sys_enter_mmap) are attached by the id tracefs gives them. Where tracefs is not
// mounted (no systemd; inside `ip netns exec`, which mounts a fresh /sys), one is mounted in
// a mount namespace of this process's own (a slave of the node's, so nothing reaches the
// node), until LeaveTracefsNamespace. Call it before starting threads.
// Returns what it did ("" when tracefs was there); an error says what is lost and how to
// mount it by hand. Needs root.
rs::Result<std::string> EnsureTracefs();
// Once the classic tracepoints are attached (they stay attached): back to the mount namespace
// EnsureTracefs left, so the process holds no copy of the node's mounts (a private copy would
// keep filesystems the node unmounts alive). The working directory is kept by path. Nothing
// to do when EnsureTracefs made no namespace. Needs a single-threaded process.
rs::Result<void> LeaveTracefsNamespace();

}  // namespace rs::rec
