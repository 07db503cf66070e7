// The CUDA capture source: uprobes + uretprobes on the CUDA runtime (libcudart, incl. the
// per-thread-stream _ptsz variants and cudaLaunchKernelExC) and driver (libcuda) APIs of
// every library copy (bpf/cuda.bpf.c) -> cuda_events rows. Kernel launches are sampled
// 1-in-N (--cuda-launch-sample N): a sampled row carries sample_weight N, and the bundle's
// metadata says cuda_launch_sample = N. Sampling saves the record, not the probe: a launch
// left out still pays the breakpoint and the return trampoline. With N = 0 the launch
// functions are not probed at all (no cost, no launch rows).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "bpf/abi/cuda.h"
#include "recorder/call_probe.h"
#include "rscore/sqlite.h"

namespace rs::rec {

struct CudaRow {
  int pid = 0, tid = 0;
  uint64_t entry_mono_ns = 0;
  std::optional<int64_t> duration_ns;  // NULL while in flight
  std::string api;                     // 'cudaMalloc', 'cuLaunchKernel', ...
  std::string library;                 // 'cudart' | 'cuda'
  std::optional<int64_t> bytes;
  std::optional<uint64_t> stream, kernel;
  std::optional<int64_t> memcpy_kind;  // cudaMemcpyKind (driver copies: their direction)
  std::optional<uint64_t> ptr;
  std::optional<int64_t> ret;
  bool in_flight = false;
  int64_t sample_weight = 1;
  uint64_t caller = 0;
};

// The probed functions of one library kind (kCudart or kCuda).
std::span<const ProbedFunction> CudaFunctions(LibraryKind kind);
// The same without the kernel-launch functions (--cuda-launch-sample 0).
std::span<const ProbedFunction> CudaFunctionsWithoutLaunches(LibraryKind kind);

// nullopt for an unknown function id or another ABI version.
std::optional<CudaRow> DecodeCudaEvent(const cuda_event& e);

rs::Result<rs::Statement> PrepareCudaInsert(rs::Db& db);
rs::Result<void> WriteCudaRow(rs::Statement& st, const CudaRow& row, const std::string& node,
                              int64_t id, int64_t timestamp_ns, std::optional<int64_t> stack_id);

class CudaProbe : public CallProbe {
 public:
  // launch_sample: record 1 in N launches; 0: do not probe the launch functions.
  explicit CudaProbe(int launch_sample) : launch_sample_(launch_sample < 0 ? 1 : launch_sample) {}
  std::string_view source() const override { return "cuda"; }

 protected:
  rs::Result<Skeleton> Load(RecorderContext& ctx, const LoadOptions& opts) override;
  std::set<LibraryKind> Kinds() const override {
    return {LibraryKind::kCudart, LibraryKind::kCuda};
  }
  std::span<const ProbedFunction> Functions(LibraryKind kind) const override {
    return launch_sample_ == 0 ? CudaFunctionsWithoutLaunches(kind) : CudaFunctions(kind);
  }
  std::vector<std::string> ExplicitLibraries(const RecorderOptions& opts) const override;
  void OnEvent(const void* data, size_t size, bool in_flight) override;
  size_t MinEventSize() const override { return sizeof(cuda_event); }
  uint64_t EntryNs(const void* data) const override;
  uint64_t ExitNs(const void* data) const override;
  rs::Result<void> WriteMetadata(RecorderContext& ctx, uint64_t in_flight) override;
  uint64_t decode_drops() const override { return undecodable_; }

 private:
  int launch_sample_;
  rs::Statement insert_;
  uint64_t undecodable_ = 0;
};

std::unique_ptr<Probe> MakeCudaProbe(const RecorderOptions& opts);

}  // namespace rs::rec
