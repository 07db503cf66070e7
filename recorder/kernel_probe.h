// Shared lifecycle of the kernel tracepoint probes (tcp, sched, block, process): open ->
// configure -> load, trying the tp_btf programs first and the classic tracepoint programs
// when that load fails (never trusting feature probes) -> attach -> poll -> Finish.
//
// Convention in bpf/NAME.bpf.c: every program exists twice, NAME_btf (SEC "tp_btf/...") and
// NAME_tp (SEC "tracepoint/..."); the loader turns autoload off for the unused variant.
#pragma once

#include <bpf/libbpf.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "recorder/probe.h"
#include "rscore/result.h"

namespace rs::rec {

enum class TracepointVariant { kTpBtf, kTracepoint };
std::string_view VariantName(TracepointVariant v);

// Turns autoload on for the programs of `v` and off for the others (by name suffix).
void SelectVariant(bpf_object* obj, TracepointVariant v);

// Testing only: skip the tp_btf attempt so the classic tracepoint programs are exercised on a
// kernel that would accept tp_btf.
void ForceClassicTracepointsForTesting(bool on);
bool ClassicTracepointsForced();

// Checks the `abi_version` the BPF object was compiled with against this recorder's.
rs::Result<void> CheckAbiVersion(uint32_t object_version, std::string_view source);

// Sums one key of a per-CPU array map of __u64 values.
uint64_t SumPerCpuU64(int map_fd, uint32_t key);

// Runs of the loaded programs of `obj` that the kernel skipped because a run of the same
// program was already under way on that CPU (bpf_prog_info.recursion_misses, Linux 5.12+;
// 0 where the kernel does not count them). A tracepoint that fires in a softirq while its
// program runs in process context on the same CPU is lost this way.
uint64_t KernelSkippedRuns(bpf_object* obj);

// One reason events of a source were lost; the reasons add up to sources.drops.
struct DropReason {
  const char* name;  // metadata <source>_drops_<name>
  uint64_t count;
};
// Stores each reason as metadata <source>_drops_<name>.
rs::Result<void> WriteDropReasons(RecorderContext& ctx, std::string_view source,
                                  std::span<const DropReason> reasons);

// Drives one skeleton type through open/configure/load with the tp_btf -> tracepoint retry.
template <typename Skel>
struct SkeletonOps {
  Skel* (*open)();
  int (*load)(Skel*);
  void (*destroy)(Skel*);
};

// What every kernel source's event writer (TcpEventWriter, ...) shares: one prepared INSERT
// into its table, whose first three columns are id, node and timestamp_ns, for the rows of
// one node. `Writer` derives from KernelEventWriter<Writer> and names that INSERT in
// `static const char kInsertSql[]`. Pure (no BPF): testable on an in-memory db.
template <typename Writer>
class KernelEventWriter {
 public:
  static rs::Result<Writer> Create(rs::Db& db, std::string node, rs::EventIdAllocator* ids,
                                   const rs::MonoToWall* clock) {
    Writer w;
    ASSIGN_OR_RETURN(w.insert_, db.Prepare(Writer::kInsertSql));
    w.db_ = &db;
    w.node_ = std::move(node);
    w.ids_ = ids;
    w.clock_ = clock;
    return w;
  }
  // The writer of a probe started with `ctx`.
  static rs::Result<Writer> Create(const RecorderContext& ctx) {
    return Create(*ctx.db, ctx.node, ctx.ids, ctx.clock);
  }

 protected:
  // The record a BPF program sent, as `Event`; an error naming `source` when it is short.
  template <typename Event>
  static rs::Result<Event> ReadEvent(std::span<const uint8_t> data, std::string_view source) {
    Event e;
    if (data.size() < sizeof(e)) {
      return rs::Error(std::string(source) + ": short record (" + std::to_string(data.size()) +
                       " bytes, expected " + std::to_string(sizeof(e)) + ")");
    }
    std::memcpy(&e, data.data(), sizeof(e));
    return e;
  }
  // Binds id, node and timestamp_ns (columns 1 to 3) of the next row from the event's
  // bpf_ktime_get_ns(); the caller binds the rest and runs the statement.
  rs::Statement& BeginRow(uint64_t ts_ns) {
    insert_.Bind(1, ids_->Next()).Bind(2, node_);
    insert_.Bind(3, clock_->Convert(static_cast<int64_t>(ts_ns)));
    return insert_;
  }
  // 0 and "" are what the BPF programs leave in a field they could not fill (no task, no
  // name): such a column is stored as NULL.
  static std::optional<int64_t> NullIfZero(uint64_t v) {
    return v != 0 ? std::optional<int64_t>(static_cast<int64_t>(v)) : std::nullopt;
  }
  static std::optional<std::string_view> NullIfEmpty(std::string_view s) {
    return !s.empty() ? std::optional<std::string_view>(s) : std::nullopt;
  }

  rs::Db* db_ = nullptr;
  rs::Statement insert_;
  std::string node_;
  rs::EventIdAllocator* ids_ = nullptr;
  const rs::MonoToWall* clock_ = nullptr;
};

class KernelProbe : public Probe {
 public:
  ~KernelProbe() override;
  std::string method() const override { return method_; }
  uint64_t events() const override { return events_; }
  uint64_t drops() const override;
  // Sources with more to write at the end override it and call FinishKernel first.
  rs::Result<void> Finish(RecorderContext& ctx) override { return FinishKernel(ctx); }

 protected:
  // Loads the skeleton, trying tp_btf then tracepoint. `configure` sets rodata knobs on a
  // freshly opened skeleton. On success the skeleton is owned by this probe.
  // `optional`: program base names (without _btf / _tp) the source works without; when the
  // object does not load with them they are left out and that is logged.
  template <typename Skel>
  rs::Result<Skel*> Load(const SkeletonOps<Skel>& ops, RecorderContext& ctx,
                         const std::function<void(Skel*)>& configure,
                         const std::vector<std::string>& optional = {});
  // Attaches every loaded program; each attempt goes to the attach log. Fails when none
  // attached.
  rs::Result<void> AttachAll(RecorderContext& ctx);
  // Adds a ring buffer map to the shared poller; samples go to OnSample.
  rs::Result<void> AddRingBuffer(RecorderContext& ctx, bpf_map* map);
  // After Load, for a source whose events all come through one ring buffer: AttachAll, then
  // AddRingBuffer(ring).
  rs::Result<void> AttachAndPoll(RecorderContext& ctx, bpf_map* ring);
  // One ring-buffer record. Errors are counted as lost and logged once.
  virtual rs::Result<void> OnSample(std::span<const uint8_t> data) = 0;
  // Detaches, drains the shared ring buffer, snapshots the counters and writes the drop
  // reasons (metadata <source>_drops_<reason>).
  rs::Result<void> FinishKernel(RecorderContext& ctx);

  RecorderContext* ctx_ = nullptr;
  bpf_object* obj_ = nullptr;
  std::function<void()> destroy_;
  std::string method_ = "off";
  uint64_t events_ = 0;
  uint64_t decode_errors_ = 0;

 private:
  static int SampleThunk(void* self, void* data, size_t size);
  static void DisablePrograms(bpf_object* obj, const std::vector<std::string>& base_names);
  // ring_full, lost_state, undecodable, kernel_skipped: while the programs are loaded.
  std::array<DropReason, 4> DropReasons() const;
  void LogOptionalMissing(RecorderContext& ctx, const std::vector<std::string>& base_names,
                          const std::string& error);
  std::string err_with_optional_;
  std::vector<bpf_link*> links_;
  int stats_fd_ = -1;
  uint64_t final_drops_ = 0;
  bool finished_ = false;
  std::string first_decode_error_;
};

template <typename Skel>
rs::Result<Skel*> KernelProbe::Load(const SkeletonOps<Skel>& ops, RecorderContext& ctx,
                                    const std::function<void(Skel*)>& configure,
                                    const std::vector<std::string>& optional) {
  std::string errors;
  for (TracepointVariant v : {TracepointVariant::kTpBtf, TracepointVariant::kTracepoint}) {
    if (v == TracepointVariant::kTpBtf && ClassicTracepointsForced()) continue;
    // With the optional programs first; without them if the kernel rejects the object.
    for (bool with_optional : {true, false}) {
      if (!with_optional && optional.empty()) break;
      Skel* skel = ops.open();
      if (skel == nullptr) {
        return rs::Error(std::string(source()) +
                         ": cannot open the BPF object: " + std::strerror(errno));
      }
      auto abi = CheckAbiVersion(skel->rodata->abi_version, source());
      if (!abi.ok()) {
        ops.destroy(skel);
        return abi.error();
      }
      skel->rodata->scope_netns = ctx.scope_netns;
      if (configure) configure(skel);
      SelectVariant(skel->obj, v);
      if (!with_optional) DisablePrograms(skel->obj, optional);
      int err = ops.load(skel);
      if (err == 0) {
        obj_ = skel->obj;
        destroy_ = [skel, d = ops.destroy] { d(skel); };
        method_ = std::string(VariantName(v));
        stats_fd_ = bpf_map__fd(skel->maps.stats);
        if (!with_optional) LogOptionalMissing(ctx, optional, err_with_optional_);
        return skel;
      }
      if (with_optional && !optional.empty()) err_with_optional_ = std::strerror(-err);
      if (!errors.empty()) errors += "; ";
      errors += std::string(VariantName(v)) + (with_optional ? "" : " (without optional)") +
                " load failed: " + std::strerror(-err);
      ops.destroy(skel);
    }
  }
  return rs::Error(std::string(source()) + ": " + errors +
                   " (run with -v for the verifier log; needs root and a kernel with BTF)");
}

}  // namespace rs::rec
