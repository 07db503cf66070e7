#include "recorder/preflight.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace rec {

rs::Result<void> CheckRoot(uid_t euid) {
  if (euid != 0) {
    return rs::Error("must run as root (it loads eBPF programs into the kernel); run it with sudo");
  }
  return rs::Ok();
}

rs::Result<void> CheckKernelBtf(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return rs::Error("kernel BTF not found at " + path + " (" + std::strerror(errno) +
                     "): this kernel lacks CONFIG_DEBUG_INFO_BTF; run on a kernel built with "
                     "BTF (most distribution kernels since 5.4 are)");
  }
  if (!S_ISREG(st.st_mode) || st.st_size == 0) {
    return rs::Error("kernel BTF at " + path +
                     " is empty or not a file; run on a kernel built "
                     "with CONFIG_DEBUG_INFO_BTF=y");
  }
  return rs::Ok();
}

}  // namespace rec
