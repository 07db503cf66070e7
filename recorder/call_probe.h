// Shared lifecycle of the uprobe call probes (nccl_probe.cc, cuda_probe.cc): load the
// skeleton (the subclass, with LoadSkeleton), add its ring buffer to the shared poller (ctx.rb,
// created here when no probe made it before; its owner frees it), attach to every library
// copy found now and later (LibraryAttacher), drain on Tick, and at Finish detach, drain and
// write the calls still in flight (the entry map's leftovers, oldest first).
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "recorder/kernel_probe.h"
#include "recorder/library_attacher.h"
#include "recorder/probe.h"
#include "recorder/symbolize.h"

namespace rs::rec {

class CallProbe : public Probe {
 public:
  ~CallProbe() override;
  rs::Result<void> Start(RecorderContext& ctx) override;
  void Tick(RecorderContext& ctx) override;
  void OnProcessExec(RecorderContext& ctx, const ProcessExec& exec) override;
  void OnProcessTraced(RecorderContext& ctx, int pid) override;
  rs::Result<void> Finish(RecorderContext& ctx) override;
  std::string method() const override { return method_; }
  uint64_t events() const override { return events_; }
  uint64_t drops() const override;
  std::optional<int64_t> OldestInFlightNs() const override;
  CutRows WriteInFlightForCut(RecorderContext& ctx) override;
  void ForgetCutRows(uint64_t rows) override;
  // Library loads reported by the kernel (each one scanned at once).
  uint64_t library_loads() const { return library_loads_; }

  const LibraryAttacher* attacher() const { return attacher_.get(); }
  // Before Start: use one perf-event uprobe per function even where uprobe_multi links work
  // (the path older kernels take; tests exercise it this way).
  void DisableUprobeMulti() { uprobe_multi_allowed_ = false; }

 protected:
  // What the subclass's loaded skeleton provides.
  struct Skeleton {
    bpf_program* entry = nullptr;
    bpf_program* ret = nullptr;
    bpf_map* events = nullptr;        // ring buffer
    bpf_map* active = nullptr;        // entry state (LRU hash)
    bpf_map* stats = nullptr;         // per-CPU enum call_stat counters
    bpf_map* pids = nullptr;          // --pid selection
    bpf_program* lib_mmap = nullptr;  // library loads (null: left out of this load)
    bpf_map* lib_maps = nullptr;      // its ring buffer
  };
  struct LoadOptions {
    bool filter_pids = false;
    bool uprobe_multi = false;  // entry/return prepared for uprobe_multi links
    bool lib_mmap = true;       // load the library-load program (lib_prefix set)
  };
  // Opens, configures (scope_netns, filter_pids and its own knobs) and loads the skeleton;
  // with `uprobe_multi`, the entry and return programs are prepared for uprobe_multi links
  // (PrepareUprobeMulti) before the load; without `lib_mmap`, that program is not loaded.
  // Subclasses do it with LoadSkeleton.
  virtual rs::Result<Skeleton> Load(RecorderContext& ctx, const LoadOptions& opts) = 0;
  virtual std::set<LibraryKind> Kinds() const = 0;
  virtual std::span<const ProbedFunction> Functions(LibraryKind kind) const = 0;
  virtual std::vector<std::string> ExplicitLibraries(const RecorderOptions& opts) const = 0;
  // One event (from the ring buffer, or an in-flight entry at Finish): decode and write.
  // `size` is at least MinEventSize(); a shorter event than the full struct is zero-filled.
  virtual void OnEvent(const void* data, size_t size, bool in_flight) = 0;
  virtual size_t MinEventSize() const = 0;
  virtual uint64_t EntryNs(const void* data) const = 0;
  virtual uint64_t ExitNs(const void* data) const = 0;  // 0: the slot's call is in flight
  // What the decoder knows of the process's image before the exec at exec_ns.
  virtual void ForgetProcess(int /*pid*/, uint64_t /*exec_ns*/) {}
  virtual rs::Result<void> WriteMetadata(RecorderContext& /*ctx*/, uint64_t /*in_flight*/) {
    return rs::Ok();
  }
  virtual uint64_t decode_drops() const { return 0; }
  // Around writing the calls in flight for a cut: a decoder that keeps state (sequence
  // numbers) saves it first and puts it back after, so each call is decoded once for real.
  virtual void SaveDecodeState() {}
  virtual void RestoreDecodeState() {}

  // The programs and maps that a probe's own BPF program names (call_probe.bpf.h names the
  // others of Skeleton, the same in every skeleton).
  struct OwnParts {
    bpf_program* entry;
    bpf_program* ret;
    bpf_map* events;
    bpf_map* active;
  };
  // Load of the bpftool skeleton `Skel` of a BPF program built on call_probe.bpf.h: opens it
  // (`ops`), sets the knobs of call_probe.bpf.h, lets `configure` set the probe's own,
  // prepares the programs (PrepareLoad; `lib_prefix`: the start of the library file names
  // that lib_mmap reports) and loads it. From the open on, the skeleton is this probe's
  // (Unload, the destructor).
  template <typename Skel>
  rs::Result<Skeleton> LoadSkeleton(const SkeletonOps<Skel>& ops, OwnParts (*own)(Skel*),
                                    RecorderContext& ctx, const LoadOptions& opts,
                                    std::string_view lib_prefix,
                                    const std::function<void(Skel*)>& configure = nullptr);

  // For OnEvent: the event as `Event`, zero-filled beyond `size`; one still in flight (at
  // Finish) has no exit time.
  template <typename Event>
  static Event CopyEvent(const void* data, size_t size, bool in_flight) {
    Event e;
    std::memset(&e, 0, sizeof(e));
    std::memcpy(&e, data, std::min(size, sizeof(e)));
    if (in_flight) e.exit_ns = 0;
    return e;
  }

  // For OnEvent: bookkeeping shared by both probes.
  void NoteProcess(int pid);  // the process calls the library: trace it
  std::optional<int64_t> StackFor(int pid, uint64_t caller);
  int64_t WallNs(uint64_t mono_ns) const;
  int64_t NextId();
  void NoteWrite(const rs::Result<void>& r);  // counts rows written / failed

  RecorderContext* ctx_ = nullptr;

 private:
  static int SampleThunk(void* self, void* data, size_t size);
  static int LibMapThunk(void* self, void* data, size_t size);
  // Prepares the programs every skeleton has (uprobe_multi, and the library-load program
  // with its file-name prefix, or not loaded at all).
  static void PrepareLoad(const LoadOptions& opts, bpf_program* entry, bpf_program* ret,
                          bpf_program* lib_mmap, char (&prefix_field)[16], std::string_view prefix);
  // The calls in flight now, oldest first (the active map's slots without an exit).
  std::vector<std::vector<unsigned char>> InFlightEntries() const;
  // Detaches (the destructor, before it unloads the skeleton).
  void Shutdown();
  // Destroys the skeleton LoadSkeleton opened (to load it again the other way).
  void Unload();
  // Loads the skeleton the best way the kernel allows; true: for uprobe_multi links.
  rs::Result<bool> LoadBest(RecorderContext& ctx);
  void AttachLibMmap(RecorderContext& ctx);
  // While the stats map is loaded. A run of the entry or return program that the kernel
  // skipped (KernelSkippedRuns) shows up here already, as a lost or a stale entry.
  std::array<DropReason, 4> DropReasons() const;
  void Consume();

  Skeleton skel_;
  std::function<void()> destroy_skeleton_;  // set while a skeleton is open
  bool filter_pids_ = false;
  bool load_tracepoint_ = true;  // attach the library-load program (--no-load-tracepoint)
  bool uprobe_multi_allowed_ = true;
  std::unique_ptr<LibraryAttacher> attacher_;
  bpf_link* lib_mmap_link_ = nullptr;
  std::string lib_mmap_error_;  // why the library-load program was left out of the load
  std::unique_ptr<CallerSymbolizer> symbolizer_;
  std::string method_ = "off";
  uint64_t events_ = 0;
  uint64_t library_loads_ = 0;
  uint64_t bad_events_ = 0;
  uint64_t final_drops_ = 0;
  bool finished_ = false;
  std::string first_error_;
};

template <typename Skel>
rs::Result<CallProbe::Skeleton> CallProbe::LoadSkeleton(
    const SkeletonOps<Skel>& ops, OwnParts (*own)(Skel*), RecorderContext& ctx,
    const LoadOptions& opts, std::string_view lib_prefix,
    const std::function<void(Skel*)>& configure) {
  Skel* skel = ops.open();
  if (!skel) {
    const int err = errno;
    return rs::Error(std::string(source()) + ": cannot open the BPF object: " + std::strerror(err));
  }
  destroy_skeleton_ = [skel, destroy = ops.destroy] { destroy(skel); };
  skel->rodata->scope_netns = ctx.scope_netns;
  skel->rodata->filter_pids = opts.filter_pids ? 1 : 0;
  if (configure) configure(skel);
  const OwnParts parts = own(skel);
  PrepareLoad(opts, parts.entry, parts.ret, skel->progs.lib_mmap, skel->rodata->lib_prefix,
              lib_prefix);
  if (int err = ops.load(skel); err != 0) {
    return rs::Error(std::string(source()) + ": BPF load failed: " + std::strerror(-err) +
                     " (needs root and a kernel with uprobes and BTF)");
  }
  return Skeleton{parts.entry,
                  parts.ret,
                  parts.events,
                  parts.active,
                  skel->maps.stats,
                  skel->maps.pids,
                  opts.lib_mmap ? skel->progs.lib_mmap : nullptr,
                  skel->maps.lib_maps};
}

}  // namespace rs::rec
