// The NCCL capture source: uprobes + uretprobes on the NCCL API of every libnccl copy
// (bpf/nccl.bpf.c), decoded by NcclDecoder into nccl_events rows; calls still in flight at
// the end of recording are written with duration NULL and state 'in_flight'.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "recorder/call_probe.h"
#include "recorder/nccl_decode.h"
#include "rscore/sqlite.h"

namespace rs::rec {

// The probed NCCL functions and their cookies (function id | what to read): every one, or
// (`setup_only`, --nccl-calls setup) communicator setup and teardown only.
std::span<const ProbedFunction> NcclFunctions(bool setup_only = false);

// INSERT of one nccl_events row.
rs::Result<rs::Statement> PrepareNcclInsert(rs::Db& db);
rs::Result<void> WriteNcclRow(rs::Statement& st, const NcclRow& row, const std::string& node,
                              int64_t id, int64_t timestamp_ns, std::optional<int64_t> stack_id);

class NcclProbe : public CallProbe {
 public:
  explicit NcclProbe(bool setup_only = false) : setup_only_(setup_only) {}
  std::string_view source() const override { return "nccl"; }
  const NcclDecoder& decoder() const { return decoder_; }

 protected:
  rs::Result<Skeleton> Load(RecorderContext& ctx, const LoadOptions& opts) override;
  std::set<LibraryKind> Kinds() const override { return {LibraryKind::kNccl}; }
  std::span<const ProbedFunction> Functions(LibraryKind) const override {
    return NcclFunctions(setup_only_);
  }
  std::vector<std::string> ExplicitLibraries(const RecorderOptions& opts) const override;
  void OnEvent(const void* data, size_t size, bool in_flight) override;
  size_t MinEventSize() const override { return offsetof(nccl_event, unique_id); }
  uint64_t EntryNs(const void* data) const override;
  uint64_t ExitNs(const void* data) const override;
  void ForgetProcess(int pid, uint64_t exec_ns) override { decoder_.ForgetProcess(pid, exec_ns); }
  rs::Result<void> WriteMetadata(RecorderContext& ctx, uint64_t in_flight) override;
  uint64_t decode_drops() const override { return decoder_.abi_mismatches(); }
  void SaveDecodeState() override { saved_decoder_ = decoder_; }
  void RestoreDecodeState() override {
    if (saved_decoder_) decoder_ = std::move(*saved_decoder_);
    saved_decoder_.reset();
  }

 private:
  bool setup_only_;
  NcclDecoder decoder_;
  std::optional<NcclDecoder> saved_decoder_;
  rs::Statement insert_;
};

std::unique_ptr<Probe> MakeNcclProbe(const RecorderOptions& opts);

}  // namespace rs::rec
