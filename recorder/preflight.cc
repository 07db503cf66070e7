#include "recorder/preflight.h"

#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace rs::rec {

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

int g_node_mount_ns = -1;  // the namespace EnsureTracefs left, until LeaveTracefsNamespace
int g_root_dir = -1;       // this process's root directory then (a chroot's, maybe)

}  // namespace

rs::Result<std::string> EnsureTracefs() {
  // libbpf looks under /sys/kernel/debug/tracing when that path exists, else here.
  const std::string debugfs = "/sys/kernel/debug/tracing", tracefs = "/sys/kernel/tracing";
  const std::string& dir = access(debugfs.c_str(), F_OK) == 0 ? debugfs : tracefs;
  if (HasTracingEvents(dir)) return std::string();
  auto fail = [&](const char* step) -> rs::Result<std::string> {
    const int err = errno;
    (void)LeaveTracefsNamespace();  // nothing mounted: back where the node's files are
    errno = err;
    return rs::Error("tracefs is not mounted at " + dir + " and " + step + " failed (" +
                     std::strerror(errno) +
                     "): classic tracepoints and library-load reports are unavailable; "
                     "mount it with 'mount -t tracefs nodev " +
                     dir + "'");
  };
  const int node_ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
  if (node_ns < 0) return fail("opening /proc/self/ns/mnt");
  // setns on the way back sets the root directory to the namespace's: inside a chroot that
  // would be the host's root, where the output path means another file.
  const int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0 || unshare(CLONE_NEWNS) != 0) {
    const int err = errno;
    close(node_ns);
    if (root >= 0) close(root);
    errno = err;
    return fail(root < 0 ? "opening /" : "making a mount namespace");
  }
  g_node_mount_ns = node_ns;
  g_root_dir = root;
  // Slaves first: a mount under a shared /sys would otherwise show up on the whole node. In a
  // chroot "/" is no mount point (EINVAL); /sys, where tracefs goes, is then the one to change.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0 &&
      (errno != EINVAL || mount(nullptr, "/sys", nullptr, MS_REC | MS_SLAVE, nullptr) != 0)) {
    return fail("making the mounts slaves");
  }
  if (mount("tracefs", dir.c_str(), "tracefs", 0, nullptr) != 0) return fail("mounting tracefs");
  if (!HasTracingEvents(dir)) {
    errno = ENOENT;
    return fail("finding events/ in the new mount");
  }
  return "tracefs mounted at " + dir + " in the recorder's own mount namespace";
}

rs::Result<void> LeaveTracefsNamespace() {
  if (g_node_mount_ns < 0) return rs::Ok();
  const int ns = std::exchange(g_node_mount_ns, -1);
  std::string cwd(PATH_MAX, '\0');
  const bool have_cwd = getcwd(cwd.data(), cwd.size()) != nullptr;
  const int root = std::exchange(g_root_dir, -1);
  int rc = setns(ns, CLONE_NEWNS);
  int err = errno;
  close(ns);
  if (rc == 0 && root >= 0 && (fchdir(root) != 0 || chroot(".") != 0)) {
    rc = -1;
    err = errno;
  }
  if (root >= 0) close(root);
  if (rc != 0) {
    return rs::Error(std::string("returning to the node's mount namespace failed (") +
                     std::strerror(err) +
                     "): the recorder keeps its own, where filesystems the node unmounts stay "
                     "mounted until it exits");
  }
  // setns moved the working directory to the namespace's root.
  if (have_cwd && chdir(cwd.c_str()) != 0) {
    return rs::Error("back in the node's mount namespace, its working directory " +
                     std::string(cwd.c_str()) + " is gone: " + std::strerror(errno));
  }
  return rs::Ok();
}

}  // namespace rs::rec
