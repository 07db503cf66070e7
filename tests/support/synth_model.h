// The synthetic cluster's model (see synth_bundle.h): the rows every node's recorder would
// write, generated in time order per node. Internal to tests/support.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "synth_bundle.h"

namespace synth {

struct NcclRow {
  int64_t ts, dur;  // recorded wall clock; dur < 0 = in flight
  int pid, rank, nranks;
  const char* op;
  int64_t seq, count, bytes;
  uint64_t comm_hash;
  int64_t stream;
};
struct CudaRow {
  int64_t ts, dur;  // dur < 0 = in flight
  int pid;
  const char* api;
  int64_t stream;   // 0: none
  int memcpy_kind;  // 0: none
  int64_t bytes;
};
struct GpuRow {
  int64_t ts;  // host enqueue, recorded
  int pid, rank, nranks;
  const char* op;
  int64_t seq, bytes;
  uint64_t comm_hash;
  std::optional<int64_t> start, end, clock_error;  // device times, recorded
  const char* state;
};
struct TcpRow {
  int64_t ts;
  std::string saddr, daddr;
  int sport, dport;
  int64_t seq;
};
struct SchedRow {
  int64_t ts, dur;
  const char* event;
  int pid, other_pid;
  const char* other_comm;
};
struct BlockRow {
  int64_t ts, dur, bytes;
  const char* op;
  int pid;
};

struct RdmaRow {
  int64_t ts;                    // the reading, recorded
  std::optional<int64_t> since;  // the reading before, recorded
  const char* counter;
  const char* dir;
  int64_t value;
  std::optional<int64_t> delta;
};

// Receives every generated row, tagged with its node.
struct Sink {
  std::function<void(int, const NcclRow&)> nccl;
  std::function<void(int, const TcpRow&)> tcp;
  std::function<void(int, const SchedRow&)> sched;
  std::function<void(int, const BlockRow&)> block;
  std::function<void(int, int64_t, const char*, int)> process;  // node, ts, event, pid
  std::function<void(int, const CudaRow&)> cuda;
  std::function<void(int, const GpuRow&)> gpu;
  std::function<void(int, const RdmaRow&)> rdma;  // ClusterSpec::rdma
};

// Generates the run of `spec` into `sink`; returns its true end time.
int64_t RunModel(const ClusterSpec& spec, const Sink& sink);

// The pid of local rank `local` on node `node`.
int Pid(int node, int local);

}  // namespace synth
