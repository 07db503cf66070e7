#include "recorder/library_attacher.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "recorder/attach_log.h"
#include "recorder/options.h"
#include "recorder/symbolize.h"
#include "recorder/uprobe_multi.h"

namespace rs::rec {
namespace {

// The name to show for a copy: its own path when the host sees the same file there.
std::string DisplayTarget(const LibraryCopy& copy) {
  if (copy.open_path == copy.path) return copy.path;
  struct stat st;
  if (stat(copy.path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_dev) == copy.dev &&
      static_cast<uint64_t>(st.st_ino) == copy.ino) {
    return copy.path;
  }
  return copy.open_path;  // /proc/PID/root/...: another mount namespace (a container)
}

void Log(RecorderContext& ctx, LibraryKind kind, const std::string& target,
         const std::string& symbol, bool ok, const std::string& error,
         const std::string& build_id) {
  if (ctx.attach_log) {
    ctx.attach_log->Record(std::string(LibraryKindName(kind)), target, symbol, ok, error, build_id);
  }
}

}  // namespace

LibraryAttacher::LibraryAttacher(std::set<LibraryKind> kinds, FunctionTable table,
                                 bpf_program* entry, bpf_program* ret, bool uprobe_multi)
    : kinds_(std::move(kinds)),
      table_(std::move(table)),
      entry_(entry),
      ret_(ret),
      uprobe_multi_(uprobe_multi) {}

LibraryAttacher::~LibraryAttacher() { DetachAll(); }

// Entry probes first: a call entered before its entry probe goes has its return probe armed
// (the kernel arms it at entry), and what is still active after the return probes went is
// in flight at the end of recording.
void LibraryAttacher::DetachAll() {
  for (bpf_link* l : entry_links_) bpf_link__destroy(l);
  entry_links_.clear();
  for (bpf_link* l : return_links_) bpf_link__destroy(l);
  return_links_.clear();
  for (int fd : multi_entry_links_) close(fd);
  multi_entry_links_.clear();
  for (int fd : multi_return_links_) close(fd);
  multi_return_links_.clear();
}

void LibraryAttacher::Start(RecorderContext& ctx, const std::vector<std::string>& explicit_paths) {
  std::vector<int> pids;
  if (ctx.options) pids = ctx.options->pids;
  discovery_ = std::make_unique<LibraryDiscovery>(ctx.proc_root, kinds_, pids, ctx.scope_netns,
                                                  ctx.library_maps);
  for (const std::string& path : explicit_paths) {
    auto kind = ClassifyLibrary(path);
    if (!kind) {
      // Not a standard file name: pick the kind whose functions the file exports.
      auto elf = ElfFile::Load(path);
      size_t best = 0;
      for (LibraryKind k : kinds_) {
        size_t n = 0;
        if (elf.ok()) {
          for (const ProbedFunction& f : table_(k)) n += elf->HasSymbol(f.name) ? 1 : 0;
        }
        if (n > best) best = n, kind = k;
      }
    }
    if (!kind || !kinds_.count(*kind)) {
      Log(ctx, *kinds_.begin(), path, "", false,
          "exports none of the probed functions (is this the right --nccl-lib / --cuda-lib?)", "");
      continue;
    }
    auto copy = discovery_->AddExplicit(path, *kind);
    if (!copy.ok()) {
      Log(ctx, *kind, path, "", false, copy.error().message(), "");
    } else if (copy.value()) {
      Attach(ctx, **copy);
    }
  }
  for (const LibraryCopy& copy : discovery_->Scan()) Attach(ctx, copy);
}

void LibraryAttacher::Watch(int pid, int64_t now_ms) { watched_[pid] = now_ms + kExecWatchMs; }

void LibraryAttacher::ScanNow(RecorderContext& ctx, int pid, int64_t now_ms) {
  if (!discovery_) return;
  // Not from the shared cache: it may predate the mapping just reported.
  for (const LibraryCopy& copy : discovery_->ScanPid(pid, /*fresh=*/true)) Attach(ctx, copy);
  Watch(pid, now_ms);
}

void LibraryAttacher::Tick(RecorderContext& ctx, int64_t now_ms) {
  if (!discovery_) return;
  for (auto it = watched_.begin(); it != watched_.end();) {
    for (const LibraryCopy& copy : discovery_->ScanPid(it->first)) Attach(ctx, copy);
    it = now_ms >= it->second ? watched_.erase(it) : std::next(it);
  }
  if (now_ms < next_scan_ms_) return;
  next_scan_ms_ = now_ms + kLibraryRescanMs;
  for (const LibraryCopy& copy : discovery_->Scan()) Attach(ctx, copy);
}

void LibraryAttacher::Attach(RecorderContext& ctx, const LibraryCopy& copy) {
  const std::string target = DisplayTarget(copy);
  auto elf = ElfFile::Load(copy.open_path);
  if (!elf.ok()) {
    Log(ctx, copy.kind, target, "", false, elf.error().message(), "");
    return;
  }
  const std::string& build_id = elf->build_id();
  // The functions to attach, once per file offset.
  std::map<uint64_t, const ProbedFunction*> by_offset;
  for (const ProbedFunction& f : table_(copy.kind)) {
    const std::string symbol(f.name);
    auto off = elf->FunctionOffset(f.name);
    if (!off) {
      Log(ctx, copy.kind, target, symbol, false, "not exported by this library version", build_id);
      continue;
    }
    if (auto it = by_offset.find(*off); it != by_offset.end()) {
      Log(ctx, copy.kind, target, symbol, true,
          "same address as " + std::string(it->second->name) + ": probed once", build_id);
      continue;
    }
    by_offset.emplace(*off, &f);
  }
  if (by_offset.empty()) return;
  int attached = uprobe_multi_ ? AttachMulti(copy, by_offset) : 0;
  if (attached < 0) {  // the multi link failed: say so for each function
    for (const auto& [off, f] : by_offset) {
      Log(ctx, copy.kind, target, std::string(f->name), false,
          std::string("uprobe_multi attach failed: ") + std::strerror(-attached), build_id);
    }
    return;
  }
  const int before = functions_;
  for (const auto& [off, f] : by_offset) {
    std::string error;
    if (!uprobe_multi_) error = AttachOne(copy, off, f->cookie);
    if (error.empty()) ++functions_;
    Log(ctx, copy.kind, target, std::string(f->name), error.empty(), error, build_id);
  }
  if (functions_ > before) ++libraries_;
}

int LibraryAttacher::AttachMulti(const LibraryCopy& copy,
                                 const std::map<uint64_t, const ProbedFunction*>& fns) {
  std::vector<uint64_t> offsets, cookies;
  for (const auto& [off, f] : fns) {
    offsets.push_back(off);
    cookies.push_back(f->cookie);
  }
  // Return probes first (see AttachOne).
  int ret = CreateUprobeMultiLink(ret_, copy.open_path, offsets, cookies, true);
  if (ret < 0) return ret;
  int entry = CreateUprobeMultiLink(entry_, copy.open_path, offsets, cookies, false);
  if (entry < 0) {
    close(ret);
    return entry;
  }
  multi_entry_links_.push_back(entry);
  multi_return_links_.push_back(ret);
  return static_cast<int>(fns.size());
}

std::string LibraryAttacher::AttachOne(const LibraryCopy& copy, uint64_t off, uint32_t cookie) {
  LIBBPF_OPTS(bpf_uprobe_opts, entry_opts, .bpf_cookie = cookie, .retprobe = false);
  LIBBPF_OPTS(bpf_uprobe_opts, ret_opts, .bpf_cookie = cookie, .retprobe = true);
  // The return probe first: the kernel arms a call's return probe when the call enters, so
  // with the entry probe created first, a call entering in between would be recorded with no
  // return, its thread's slot left active (and later calls taken for calls nested in it).
  bpf_link* ret = bpf_program__attach_uprobe_opts(ret_, -1, copy.open_path.c_str(), off, &ret_opts);
  if (!ret) return std::string("uretprobe attach failed: ") + std::strerror(errno);
  bpf_link* entry =
      bpf_program__attach_uprobe_opts(entry_, -1, copy.open_path.c_str(), off, &entry_opts);
  if (!entry) {
    int err = errno;
    bpf_link__destroy(ret);
    return std::string("uprobe attach failed: ") + std::strerror(err);
  }
  entry_links_.push_back(entry);
  return_links_.push_back(ret);
  return "";
}

}  // namespace rs::rec
