// rankscope's NCCL profiler plugin records (recorder/plugin/gpu_ring.h) -> gpu_ops rows. Pure
// bookkeeping, no mapping and no database, so it is tested on hand-made records: names as
// nccl_events spells them (NcclFuncOpName, NcclDatatypeName), bytes from the count and the
// datatype, peer or root by operation, zero and "none" values as NULL. Times stay on the
// host's monotonic clock here; the gpu probe converts them to the wall clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "recorder/plugin/gpu_ring.h"

namespace rs::rec {

struct GpuOpRow {
  int64_t enqueue_mono_ns = 0;  // timestamp_ns, before conversion: the API call (v5), else
                                // the task's Coll / P2p event
  std::optional<int64_t> tid;
  std::string op;  // 'ALL_REDUCE', ..., 'SEND', 'RECV'
  std::optional<int64_t> rank, nranks;
  std::optional<uint64_t> nccl_comm_hash;
  std::optional<int64_t> seq, nccl_seq;
  std::optional<int64_t> count;
  std::optional<std::string> datatype;
  std::optional<int64_t> bytes, peer, root;
  std::optional<std::string> algorithm, protocol;
  std::optional<int64_t> channels;
  std::optional<int64_t> device_start_mono_ns, device_end_mono_ns;  // NULL: not started / ended
  std::optional<int64_t> clock_error_ns;  // NULL: unbounded, or no device time to bound
  int64_t net_bytes_sent = 0, net_bytes_recv = 0;
  // v7: the call's user tag (NULL: untagged; NCCL reserves tags with the top bit set, kept as
  // SQLite's signed 64 bits), the longest initial / final sync phase of its channels in device
  // ns (NULL: no phases reported; 0: none of that phase, which NCCL reports only when it lasted).
  std::optional<int64_t> user_tag, initial_sync_ns, final_sync_ns;
  // v7: 1 where NCCL ran it with a symmetric-memory kernel (its initial_sync is the wait at an
  // opening barrier with its peers), 0 another kernel; NULL: an older profiler API.
  std::optional<int64_t> kernel_symmetric;
  // A CUDA graph's replay (RS_GPU_GRAPH_REPLAY): the captured call's seq, and a collective's
  // number among its communicator's replayed collectives; seq stays NULL (no call of its own).
  std::optional<int64_t> graph_call_seq, graph_replay_seq;
  // NCCL's network proxy, summed over the steps timed (rs_gpu_op's send_gpu_wait_ns ...): all
  // NULL where no step was timed; net_step_max_peer NULL also where the peer was not named.
  std::optional<int64_t> proxy_steps, send_gpu_wait_ns, send_peer_wait_ns, send_net_ns,
      recv_net_wait_ns, recv_gpu_wait_ns, net_step_max_ns, net_step_max_peer;
  // Some steps went untimed (RS_GPU_PROXY_TIMES_PARTIAL): the sums are lower bounds.
  bool proxy_times_partial = false;
  std::string state;  // 'enqueued' | 'started' | 'completed'
  // A device time ran backwards (the plugin's RS_GPU_DEVICE_TIME_BACKWARDS, or an end before
  // the start in the record): the times that disagree are left NULL, never used.
  bool device_time_backwards = false;
};

// nullopt for a record this recorder cannot read: an operation or state it does not know, or
// no enqueue time (counted as undecodable by the probe).
std::optional<GpuOpRow> DecodeGpuOp(const rs_gpu_op& op);

const char* GpuAlgorithmName(uint8_t algo);  // 'RING', 'TREE', ...; nullptr: unknown
const char* GpuProtocolName(uint8_t proto);  // 'LL', 'LL128', 'SIMPLE'; nullptr: unknown
const char* GpuStateName(uint8_t state);     // 'enqueued', ...; nullptr: unknown

}  // namespace rs::rec
