// uprobe_multi links (Linux 6.6+): one link attaches a program to many functions of one file,
// and detaching it waits for one kernel grace period instead of one per function (~100 ms
// each here, seconds for a library). libbpf 1.1 predates them, so the link is created with
// the bpf(2) syscall directly. Programs must be loaded for this attach type
// (PrepareUprobeMulti before load); UprobeMultiWorks tells whether the kernel accepts them.
#pragma once

#include <bpf/libbpf.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rs::rec {

// Marks a not yet loaded program for uprobe_multi attachment.
void PrepareUprobeMulti(bpf_program* prog);
// One link on every offset of `path` (cookies[i] for offsets[i]). Returns the link fd, or
// -errno.
int CreateUprobeMultiLink(bpf_program* prog, const std::string& path,
                          const std::vector<uint64_t>& offsets,
                          const std::vector<uint64_t>& cookies, bool retprobe);
// Attaches `prog` (prepared and loaded) to a function of the recorder itself and detaches it.
bool UprobeMultiWorks(bpf_program* prog);

}  // namespace rs::rec
