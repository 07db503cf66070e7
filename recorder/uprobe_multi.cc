#include "recorder/uprobe_multi.h"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "recorder/symbolize.h"

// A function of this executable to try an attachment on.
extern "C" __attribute__((noinline, used)) int rankscope_uprobe_multi_check(int x) {
  asm volatile("" ::: "memory");
  return x + 1;
}

namespace rs::rec {
namespace {

constexpr uint32_t kBpfTraceUprobeMulti = 48;   // enum bpf_attach_type, Linux 6.6
constexpr uint32_t kBpfFUprobeMultiReturn = 1;  // BPF_F_UPROBE_MULTI_RETURN

// The BPF_LINK_CREATE part of union bpf_attr with its uprobe_multi member (Linux 6.6 uapi).
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t multi_flags;
  uint32_t pid;
  uint32_t pad;
};
static_assert(sizeof(LinkCreateUprobeMulti) == 64);

}  // namespace

void PrepareUprobeMulti(bpf_program* prog) {
  bpf_program__set_expected_attach_type(prog, static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
}

int CreateUprobeMultiLink(bpf_program* prog, const std::string& path,
                          const std::vector<uint64_t>& offsets,
                          const std::vector<uint64_t>& cookies, bool retprobe) {
  if (offsets.empty() || offsets.size() != cookies.size()) return -EINVAL;
  unsigned char attr[sizeof(union bpf_attr) > 64 ? sizeof(union bpf_attr) : 64] = {};
  LinkCreateUprobeMulti a{};
  a.prog_fd = static_cast<uint32_t>(bpf_program__fd(prog));
  a.attach_type = kBpfTraceUprobeMulti;
  a.path = reinterpret_cast<uint64_t>(path.c_str());
  a.offsets = reinterpret_cast<uint64_t>(offsets.data());
  a.cookies = reinterpret_cast<uint64_t>(cookies.data());
  a.cnt = static_cast<uint32_t>(offsets.size());
  a.multi_flags = retprobe ? kBpfFUprobeMultiReturn : 0;
  std::memcpy(attr, &a, sizeof(a));
  long fd = syscall(__NR_bpf, BPF_LINK_CREATE, attr, sizeof(attr));
  return fd >= 0 ? static_cast<int>(fd) : -errno;
}

bool UprobeMultiWorks(bpf_program* prog) {
  // The file offset of the check function, from this process's own mapping of it (works for
  // stripped binaries too).
  auto maps = ReadMaps("/proc", getpid());
  if (!maps.ok()) return false;
  const uint64_t addr = reinterpret_cast<uint64_t>(&rankscope_uprobe_multi_check);
  for (const Mapping& m : *maps) {
    if (addr < m.start || addr >= m.end || m.path.empty() || m.path[0] != '/') continue;
    uint64_t off = addr - m.start + m.offset;
    // The file by this process's own link to it: the path in maps can name a file the kernel
    // cannot find from here (a chroot seen from a mount namespace made after it: ENOENT).
    int fd = CreateUprobeMultiLink(prog, "/proc/self/exe", {off}, {0}, /*retprobe=*/false);
    if (fd < 0) return false;
    close(fd);
    return true;
  }
  return false;
}

}  // namespace rs::rec
