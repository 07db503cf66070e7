#include "recorder/preflight.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

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

namespace {

bool HasTracingEvents(const std::string& dir) {
  return access((dir + "/events").c_str(), F_OK) == 0;
}

}  // namespace

rs::Result<std::string> EnsureTracefs() {
  // libbpf looks under /sys/kernel/debug/tracing when that path exists, else here.
  const std::string debugfs = "/sys/kernel/debug/tracing", tracefs = "/sys/kernel/tracing";
  const std::string& dir = access(debugfs.c_str(), F_OK) == 0 ? debugfs : tracefs;
  if (HasTracingEvents(dir)) return std::string();
  auto fail = [&](const char* step) -> rs::Result<std::string> {
    return rs::Error("tracefs is not mounted at " + dir + " and " + step + " failed (" +
                     std::strerror(errno) +
                     "): classic tracepoints and library-load reports are unavailable; "
                     "mount it with 'mount -t tracefs nodev " +
                     dir + "'");
  };
  if (unshare(CLONE_NEWNS) != 0) return fail("making a private mount namespace");
  // Slaves first: a mount under a shared /sys would otherwise show up on the whole node. As
  // slaves they still follow the node's own mounts and unmounts (a container's filesystems
  // are not kept alive here after the node unmounts them).
  if (mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
    return fail("making the mounts slaves");
  }
  if (mount("tracefs", dir.c_str(), "tracefs", 0, nullptr) != 0) return fail("mounting tracefs");
  if (!HasTracingEvents(dir)) {
    errno = ENOENT;
    return fail("finding events/ in the new mount");
  }
  return "tracefs mounted at " + dir + " in the recorder's own mount namespace";
}

}  // namespace rec
