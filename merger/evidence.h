// Rendezvous evidence: which recorded times bound a collective's rendezvous, and how one node's
// records of one collective become the bounds the clock alignment uses (pure rules on plain
// structs; rendezvous.h reads them from a bundle).
//
// A collective (comm_id_hash, seq) has on every rank r a moment a_r from which the rank's part
// is available to it (its device started the collective) and a moment c_r by which the rank
// knows it done (its device finished it). No rank's device can finish a collective before every
// rank's device started it: max_r a_r <= min_r c_r. Evidence gives, in the rank's node clock, an
// entry e_r <= a_r and an exit x_r >= c_r, so for ranks i on node a and j on node b
//     e_i - x_j  <=  o_a - o_b  <=  x_i - e_j        (o: how far a clock is ahead)
// The kinds of evidence:
//   device         gpu_ops in state 'completed' with both device times: e = device_start_ns -
//                  clock_error_ns (the plugin's converted times are never earlier than the truth
//                  and at most clock_error_ns later), x = device_end_ns. Without a bound
//                  (clock_error_ns NULL) e = device_start_ns as converted, and the alignment's
//                  note says so.
//   blocking_call  the entry and exit of an NCCL call that returns only once the collective is
//                  done (a CPU framework, NCCL on the test bed in sync mode): see rs::CallMode.
//   sync_after     for a call that only enqueues: its entry, and the exit of the first blocking
//                  sync call of the same process entered after the call returned that waits for
//                  the collective (see BlockingSyncKind): a blocking sync that returns after the
//                  collective completed happened after every rank enqueued it.
//   comm_init      communicator init and split, matched by comm_id_hash: they block until every
//                  rank has joined.
// Every host call's entry precedes its device start, so the entries of enqueueing calls count
// too. A node's bounds take the tightest of every valid entry and exit of its ranks. An enqueue's
// exit never bounds anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "merger/clock_alignment.h"
#include "rscore/call_mode.h"

namespace rs::merge {

using rs::CallMode;

// One rank's NCCL call of a collective as its node recorded it: completed, successful, not in a
// group (a grouped call's work starts only at ncclGroupEnd).
struct HostCall {
  int64_t entry_ns = 0, exit_ns = 0;
  bool gpu_process = false;  // its process made CUDA runtime/driver calls or has gpu_ops rows,
                             // and ran without CUDA_LAUNCH_BLOCKING=1: its calls enqueue
  std::optional<int64_t> sync_exit_ns;  // see FirstSyncExit; nullopt: none waited for it
};

// One rank's device times of a collective (gpu_ops, completed), on the node's wall clock.
struct DeviceSpan {
  int64_t start_ns = 0, end_ns = 0;
  std::optional<int64_t> clock_error_ns;  // nullopt: the conversion is unbounded
};

// What one node recorded of one collective or communicator init (all its ranks).
struct NodeRecords {
  bool init = false;  // communicator init / split: its calls always block
  std::vector<HostCall> calls;
  std::vector<DeviceSpan> device;
};

// Whether `call` blocks until its collective is done, under `mode`.
bool Blocks(const HostCall& call, CallMode mode);  // kByProcess: !call.gpu_process

// The node's bounds of one collective from its records: the latest valid entry, the earliest
// valid exit, the median exit of the preferred kind (device, else blocking_call, else
// sync_after; comm_init for inits), which also names the observation's evidence. nullopt
// without an entry or an exit. An observation whose exit precedes its entry proves an assumption
// wrong (the caller drops it).
std::optional<NodeObservation> Observe(const NodeRecords& records, CallMode mode, int node);

// Blocking sync calls (cuda_events) that return only after earlier work on the device is done.
enum class SyncKind {
  kDevice,  // cudaDeviceSynchronize, cuCtxSynchronize: all of the device's work
  kStream,  // cudaStreamSynchronize(_ptsz), cuStreamSynchronize: the given stream's work
  // cudaMemcpy / cuMemcpyHtoD_v2 / cuMemcpyDtoH_v2 between host and device: a copy on the
  // legacy default stream, which waits for all earlier work of the device's blocking streams.
  // Assumes the collective's stream is a blocking stream (cudaStreamCreate, not
  // cudaStreamNonBlocking) and that the process does not use per-thread default streams (its
  // copies would be cudaMemcpy_ptds, not recorded). Device-to-device and unspecified kinds do
  // not synchronize with the host and are not used.
  kLegacyCopy,
  // cudaEventSynchronize: assumes the event was recorded after the collective on its stream or
  // on a stream ordered after it (the step-end pattern), which the recording cannot check:
  // cudaEventRecord is not recorded.
  kEvent,
};
const char* SyncKindName(SyncKind kind);

// The kind of a cuda_events call, or nullopt when it is no blocking sync. `memcpy_kind`:
// cudaMemcpyKind (1 host to device, 2 device to host). `stream` 0 with a _ptsz function is the
// thread's own default stream, which no NCCL call can name: nullopt.
std::optional<SyncKind> BlockingSyncKind(std::string_view api, std::optional<int64_t> memcpy_kind,
                                         std::optional<int64_t> stream);

// One process's completed, successful blocking sync call.
struct SyncCall {
  int64_t entry_ns = 0, exit_ns = 0;
  SyncKind kind = SyncKind::kDevice;
  std::optional<int64_t> stream;  // kStream only
};

// The exit of the first of `syncs` (one process's, sorted by entry) entered at or after
// `after_ns` that waits for work on `stream` (the collective's; nullopt: unknown, so only
// stream-independent syncs count).
std::optional<int64_t> FirstSyncExit(const std::vector<SyncCall>& syncs, int64_t after_ns,
                                     std::optional<int64_t> stream);

}  // namespace rs::merge
