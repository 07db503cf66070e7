// Checks made before anything is loaded into the kernel, each failing with one line that
// names the problem and what to do.
#pragma once

#include <sys/types.h>
#include <string>

#include "rscore/result.h"

namespace rec {

inline constexpr char kKernelBtfPath[] = "/sys/kernel/btf/vmlinux";

rs::Result<void> CheckRoot(uid_t euid);
// The kernel's own BTF (CO-RE relocations and tp_btf need it).
rs::Result<void> CheckKernelBtf(const std::string& path = kKernelBtfPath);

}  // namespace rec
