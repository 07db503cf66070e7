// Attaches one BPF entry/return program pair to the probed functions of every library copy
// that LibraryDiscovery finds: explicit copies at Start, copies mapped by running processes
// at Start and on every rescan (every 500 ms, plus a process for 2 s after its exec, when
// it loads its libraries, and at once when the kernel reports it mapping a probed library).
// Functions are looked up in the ELF symbol tables (versioned names like
// cudaMalloc@@libcudart.so.13 match their bare name) and attached once per file offset:
// NCCL's ncclX is a weak alias of pncclX at the same address, so a call fires one probe only.
// Every attempt, successful or not, goes to the attach log.
#pragma once

#include <bpf/libbpf.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "recorder/library_discovery.h"
#include "recorder/probe.h"

namespace rs::rec {

struct ProbedFunction {
  std::string_view name;
  uint32_t cookie;  // function id | flags, read by the BPF programs (bpf_get_attach_cookie)
};

class LibraryAttacher {
 public:
  using FunctionTable = std::function<std::span<const ProbedFunction>(LibraryKind)>;

  // `uprobe_multi`: the programs were loaded for uprobe_multi links (one link per library
  // and direction; see uprobe_multi.h), else one perf-event uprobe per function.
  LibraryAttacher(std::set<LibraryKind> kinds, FunctionTable table, bpf_program* entry,
                  bpf_program* ret, bool uprobe_multi = false);
  ~LibraryAttacher();
  LibraryAttacher(const LibraryAttacher&) = delete;
  LibraryAttacher& operator=(const LibraryAttacher&) = delete;

  // Attaches the explicit copies (their kind from the file name, else from the symbols they
  // export) and every copy mapped by the selected processes now.
  void Start(RecorderContext& ctx, const std::vector<std::string>& explicit_paths);
  // Rescans when due. `now_ms`: CLOCK_MONOTONIC milliseconds.
  void Tick(RecorderContext& ctx, int64_t now_ms);
  // Scans `pid` on every Tick for the next 2 s (a freshly exec'd process maps its libraries).
  void Watch(int pid, int64_t now_ms);
  // Scans `pid` now (the kernel saw it map a probed library) and watches it as above.
  void ScanNow(RecorderContext& ctx, int pid, int64_t now_ms);
  void DetachAll();

  int libraries() const { return libraries_; }  // copies with at least one attached function
  int functions() const { return functions_; }  // attached functions (entry + return)
  bool uprobe_multi() const { return uprobe_multi_; }

 private:
  void Attach(RecorderContext& ctx, const LibraryCopy& copy);
  // Both links for every function of one file; returns the function count or -errno.
  int AttachMulti(const LibraryCopy& copy, const std::map<uint64_t, const ProbedFunction*>& fns);
  // Entry + return perf-event uprobes on one function; returns "" or the error.
  std::string AttachOne(const LibraryCopy& copy, uint64_t off, uint32_t cookie);

  std::set<LibraryKind> kinds_;
  FunctionTable table_;
  bpf_program* entry_;
  bpf_program* ret_;
  std::unique_ptr<LibraryDiscovery> discovery_;
  bool uprobe_multi_;
  std::vector<bpf_link*> entry_links_, return_links_;
  std::vector<int> multi_entry_links_, multi_return_links_;  // uprobe_multi link fds
  std::map<int, int64_t> watched_;                           // pid -> watch deadline (ms)
  int64_t next_scan_ms_ = 0;
  int libraries_ = 0;
  int functions_ = 0;
};

inline constexpr int64_t kLibraryRescanMs = 500;
inline constexpr int64_t kExecWatchMs = 2000;

}  // namespace rs::rec
