#include "rscore/nccl_ops.h"

#include <array>
#include <cctype>
#include <string>

namespace rs {
namespace {

// Indexed by NcclOp.
constexpr std::array<NcclOpTraits, 13> kTraits = {{
    // name, spoken, collective, p2p, rendezvous, has_root, same_count
    {"UNKNOWN", "operation", false, false, false, false, false},
    {"ALL_REDUCE", "all-reduce", true, false, true, false, true},
    {"ALL_GATHER", "all-gather", true, false, true, false, true},
    {"REDUCE_SCATTER", "reduce-scatter", true, false, true, false, true},
    {"ALL_TO_ALL", "all-to-all", true, false, true, false, false},
    {"BROADCAST", "broadcast", true, false, false, true, true},
    {"REDUCE", "reduce", true, false, false, true, true},
    {"GATHER", "gather", true, false, false, true, false},
    {"SCATTER", "scatter", true, false, false, true, false},
    {"BARRIER", "barrier", true, false, true, false, false},
    {"SEND", "send", false, true, false, false, false},
    {"RECV", "recv", false, true, false, false, false},
    {"COALESCED", "coalesced group", false, false, false, false, false},
}};

}  // namespace

const NcclOpTraits& Traits(NcclOp op) {
  const auto i = static_cast<size_t>(op);
  return i < kTraits.size() ? kTraits[i] : kTraits[0];
}

NcclOp OpFromName(std::string_view name) {
  for (size_t i = 1; i < kTraits.size(); ++i) {
    if (kTraits[i].name == name) return static_cast<NcclOp>(i);
  }
  return NcclOp::kUnknown;
}

NcclOp OpFromProfilingName(std::string_view name) {
  if (size_t colon = name.find(':'); colon != std::string_view::npos) name = name.substr(colon + 1);
  if (size_t space = name.find(' '); space != std::string_view::npos) name = name.substr(0, space);
  while (!name.empty() && name.front() == '_') name.remove_prefix(1);
  std::string n(name);
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto starts = [&](std::string_view p) { return std::string_view(n).substr(0, p.size()) == p; };
  // Longest names first: 'reduce_scatter' before 'reduce', 'all_gather' before 'gather'.
  if (starts("all_reduce") || starts("allreduce")) return NcclOp::kAllReduce;
  if (starts("all_gather") || starts("allgather")) return NcclOp::kAllGather;
  if (starts("reduce_scatter") || starts("reducescatter")) return NcclOp::kReduceScatter;
  if (starts("all_to_all") || starts("alltoall")) return NcclOp::kAllToAll;
  if (starts("broadcast")) return NcclOp::kBroadcast;
  if (starts("reduce")) return NcclOp::kReduce;
  if (starts("gather")) return NcclOp::kGather;
  if (starts("scatter")) return NcclOp::kScatter;
  if (starts("barrier")) return NcclOp::kBarrier;
  if (n == "send") return NcclOp::kSend;
  if (n == "recv") return NcclOp::kRecv;
  if (n == "coalesced") return NcclOp::kCoalesced;
  return NcclOp::kUnknown;
}

std::string RendezvousOpsSql() {
  std::string ops;
  for (int i = 0; i <= static_cast<int>(NcclOp::kCoalesced); ++i) {
    const NcclOpTraits& t = Traits(static_cast<NcclOp>(i));
    if (t.rendezvous) ops += std::string(ops.empty() ? "" : ", ") + "'" + std::string(t.name) + "'";
  }
  return ops;
}

}  // namespace rs
