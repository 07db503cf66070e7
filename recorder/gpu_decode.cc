#include "recorder/gpu_decode.h"

#include <algorithm>
#include <cstdint>

#include "recorder/nccl_decode.h"

namespace rs::rec {
namespace {

std::optional<int64_t> Positive(int64_t v) {
  return v > 0 ? std::optional<int64_t>(v) : std::nullopt;
}
std::optional<int64_t> NonNegative(int32_t v) {
  return v >= 0 ? std::optional<int64_t>(v) : std::nullopt;
}
std::optional<std::string> Text(const char* s) {
  return s ? std::optional<std::string>(s) : std::nullopt;
}

}  // namespace

const char* GpuAlgorithmName(uint8_t algo) {
  switch (algo) {
    case RS_GPU_ALGO_TREE:
      return "TREE";
    case RS_GPU_ALGO_RING:
      return "RING";
    case RS_GPU_ALGO_COLLNET_DIRECT:
      return "COLLNET_DIRECT";
    case RS_GPU_ALGO_COLLNET_CHAIN:
      return "COLLNET_CHAIN";
    case RS_GPU_ALGO_NVLS:
      return "NVLS";
    case RS_GPU_ALGO_NVLS_TREE:
      return "NVLS_TREE";
    case RS_GPU_ALGO_PAT:
      return "PAT";
    default:
      return nullptr;
  }
}

const char* GpuProtocolName(uint8_t proto) {
  switch (proto) {
    case RS_GPU_PROTO_LL:
      return "LL";
    case RS_GPU_PROTO_LL128:
      return "LL128";
    case RS_GPU_PROTO_SIMPLE:
      return "SIMPLE";
    default:
      return nullptr;
  }
}

const char* GpuStateName(uint8_t state) {
  switch (state) {
    case RS_GPU_ENQUEUED:
      return "enqueued";
    case RS_GPU_STARTED:
      return "started";
    case RS_GPU_COMPLETED:
      return "completed";
    default:
      return nullptr;
  }
}

std::optional<GpuOpRow> DecodeGpuOp(const rs_gpu_op& op) {
  const char* name = NcclFuncOpName(op.func);
  const char* state = GpuStateName(op.state);
  if (!name || !state || op.enqueue_ns <= 0) return std::nullopt;
  const bool p2p = op.func == RS_GPU_SEND || op.func == RS_GPU_RECV;
  GpuOpRow row;
  // The API call where the plugin saw it (v5): NCCL 2.28 starts a task's Coll / P2p event
  // only after it launched the kernel (or later, in a host-stream callback), so the device
  // may start before that event (seen on an H100: 18 us before); the call precedes the launch.
  row.enqueue_mono_ns = op.api_ns > 0 && op.api_ns <= op.enqueue_ns ? op.api_ns : op.enqueue_ns;
  if (op.tid > 0) row.tid = op.tid;
  row.op = name;
  row.rank = NonNegative(op.rank);
  row.nranks = Positive(op.nranks);
  if (op.nccl_comm_hash != 0) row.nccl_comm_hash = op.nccl_comm_hash;
  if (op.flags & RS_GPU_GRAPH_REPLAY) {
    if (op.graph_call_seq != 0) row.graph_call_seq = op.graph_call_seq;
    if (op.seq != 0 && !p2p) row.graph_replay_seq = static_cast<int64_t>(op.seq);
  } else if (op.seq != 0) {
    row.seq = static_cast<int64_t>(op.seq);
  }
  if (!p2p && op.nccl_seq != UINT64_MAX) row.nccl_seq = static_cast<int64_t>(op.nccl_seq);
  row.count = static_cast<int64_t>(op.count);
  row.datatype = NcclDatatypeName(op.datatype);
  row.bytes = NcclBytes(*row.count, op.datatype);  // a forged count: NULL, not overflow
  if (p2p) {
    row.peer = NonNegative(op.peer);
  } else if (op.func == RS_GPU_BROADCAST || op.func == RS_GPU_REDUCE) {
    row.root = NonNegative(op.peer);
  }
  row.algorithm = Text(GpuAlgorithmName(op.algo));
  row.protocol = Text(GpuProtocolName(op.proto));
  if (op.channels != 0) row.channels = op.channels;
  row.device_start_mono_ns = Positive(op.device_start_ns);
  row.device_end_mono_ns = Positive(op.device_end_ns);
  row.device_time_backwards = (op.flags & RS_GPU_DEVICE_TIME_BACKWARDS) != 0;
  if (row.device_start_mono_ns && row.device_end_mono_ns &&
      *row.device_end_mono_ns < *row.device_start_mono_ns) {
    row.device_time_backwards = true;  // neither time can be trusted over the other
    row.device_start_mono_ns.reset();
    row.device_end_mono_ns.reset();
  }
  if (!(op.flags & RS_GPU_CLOCK_UNBOUNDED) && op.clock_error_ns >= 0 &&
      (row.device_start_mono_ns || row.device_end_mono_ns)) {
    row.clock_error_ns = op.clock_error_ns;
  }
  row.net_bytes_sent = static_cast<int64_t>(op.net_bytes_sent);
  row.net_bytes_recv = static_cast<int64_t>(op.net_bytes_recv);
  if (op.user_tag != 0) row.user_tag = static_cast<int64_t>(op.user_tag);
  if (op.flags & RS_GPU_V7_TASK) {
    row.kernel_symmetric = (op.flags & RS_GPU_SYMMETRIC_KERNEL) ? 1 : 0;
  }
  if (op.flags & RS_GPU_KERNEL_PHASES) {
    row.initial_sync_ns = op.initial_sync_ns >= 0 ? op.initial_sync_ns : 0;
    row.final_sync_ns = op.final_sync_ns >= 0 ? op.final_sync_ns : 0;
  }
  if (op.proxy_steps > 0) {
    row.proxy_steps = op.proxy_steps;
    row.send_gpu_wait_ns = std::max<int64_t>(0, op.send_gpu_wait_ns);
    row.send_peer_wait_ns = std::max<int64_t>(0, op.send_peer_wait_ns);
    row.send_net_ns = std::max<int64_t>(0, op.send_net_ns);
    row.recv_net_wait_ns = std::max<int64_t>(0, op.recv_net_wait_ns);
    row.recv_gpu_wait_ns = std::max<int64_t>(0, op.recv_gpu_wait_ns);
    row.net_step_max_ns = std::max<int64_t>(0, op.net_step_max_ns);
    row.net_step_max_peer = NonNegative(op.net_step_max_peer);
  }
  row.proxy_times_partial = (op.flags & RS_GPU_PROXY_TIMES_PARTIAL) != 0;
  row.state = state;
  return row;
}

}  // namespace rs::rec
