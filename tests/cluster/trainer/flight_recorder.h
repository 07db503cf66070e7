// What PyTorch's Flight Recorder does for a rank (--fr-dump-dir), as ProcessGroupNCCL drives
// it (torch/csrc/distributed/c10d/FlightRecorder*.{hpp,cpp}, ProcessGroupNCCL.cpp):
//  - every process group the rank is a member of is registered with its name, description
//    and global ranks (record_pg_ranks: pg_config);
//  - every operation is an entry in a ring of TORCH_FR_BUFFER_SIZE entries (the oldest
//    overwritten; record_id keeps counting): its group's process-local id (pg_id), the group's
//    (name, desc), collective_seq_id and p2p_seq_id, op_id, profiling name, sizes and dtypes,
//    the host's wall clock at creation, the Python stack;
//  - a Work (a collective, or the coalesced end of a batch of send/recv) carries CUDA events on
//    its group's stream: an end event always, a start event only with TORCH_NCCL_ENABLE_TIMING
//    (WorkNCCL creates ncclStartEvent_ only then), so without timing an entry goes from
//    'scheduled' straight to 'completed'; the operations inside a coalesced batch are entries
//    without events (record(..., nullptr, nullptr, ...)) and stay 'scheduled';
//  - a watchdog thread queries the events and retires a completed Work, noting when it saw it
//    complete (time_discovered_completed_ns, and _started_ns where not noted yet: retire_id's
//    update_state), with duration_ms from the two events when timing is on; a Work that
//    started and is not complete is noted by the dump alone: dump_entries() runs
//    update_state on copies of the entries, so each dump stamps it with its own moment
//    (PyTorch 2.11: the timeout dump's stuck all-reduce said started 20.16 s after its
//    creation, the newest time of that dump; tests/torch/dumps/nccl_two_stalls/auto);
//    pg_status holds each group's last
//    enqueued, started and completed Work sequence number (-1 for none; the p2p number for a
//    p2p Work, as initWork takes it);
//  - it writes the rank's dump once, when a Work has been pending for the timeout (the
//    watchdog's timeout dump) or when the rank issued nothing for the timeout while others did
//    (the dump PyTorch's other ranks request through the store when they time out: the hung
//    rank's own view): DIR/nccl_trace_rank_<rank>, a pickle of dump_dict() (schema 2.10), and
//    with a JSON directory JSON_DIR/nccl_trace_rank_<rank>.json, dump_json(). Each is written
//    to a temporary name and renamed, so a reader never sees half a dump;
//  - with a pipe stem (TORCH_NCCL_DEBUG_INFO_PIPE_FILE; ProcessGroupNCCL's DumpPipe, active
//    only with a trace buffer) it makes the named pipe <stem><rank>.pipe when it starts, and
//    writes the dump each time something is written into the pipe, while the job runs on: how
//    an engineer takes the dumps of a job that is slow but not stuck
//    (`echo > <stem><rank>.pipe` on every node).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cuda_runtime_api.h"
#include "fr_value.h"

namespace trainer {

struct FrGroup {
  int64_t pg_id = 0;       // ProcessGroupNCCL's local_id_: this process's count of its groups
  std::string name, desc;  // the group's name ("0" the default group) and group_desc
  std::vector<int> ranks;  // global ranks
};

struct FrFrame {
  std::string name, file;
  int64_t line = 0;
};

struct FrOp {
  const FrGroup* group = nullptr;
  int64_t collective_seq_id = 0, p2p_seq_id = 0, op_id = 0;
  std::string profiling_name;  // "nccl:all_reduce", "nccl:send 0->1", "nccl:coalesced", ...
  std::vector<std::vector<int64_t>> input_sizes, output_sizes;  // one shape per tensor
  std::vector<std::string> input_dtypes, output_dtypes;         // PyTorch's names: "BFloat16"
  bool is_p2p = false;
  std::vector<FrFrame> frames;  // innermost first
};

class FlightRecorder {
 public:
  struct Options {
    std::string dir;       // the pickle dump goes here
    std::string json_dir;  // and, when set, the JSON dump here
    int rank = 0;
    int timeout_ms = 1500;
    bool timing = false;  // TORCH_NCCL_ENABLE_TIMING
    int buffer_size = 2000;
    int64_t op_timeout_ms = 600000;  // the groups' timeout, as each entry states it
    std::string pipe_stem;           // non-empty: dumps on request through <stem><rank>.pipe
  };
  explicit FlightRecorder(Options options);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  void AddGroup(const FrGroup& group);
  // Before issuing on `stream`: the entry, and for a Work its start event (timing on). With
  // a null stream the entry has no events (an operation inside a coalesced batch). Returns
  // the entry's record id.
  int64_t Begin(const FrOp& op, cudaStream_t stream);
  // After issuing: the Work's end event.
  void End(int64_t record_id, cudaStream_t stream);

  // Writes the dump now, once (a later call or timeout writes nothing): what the watchdog does
  // when a group's communicator reports an error, before the process ends.
  void DumpNow(const char* why);
  // The dump as the watchdog would write it now (tests).
  fr::Value DumpValue(bool json);

 private:
  struct Entry {
    int64_t record_id = 0;
    FrOp op;
    FrGroup group;  // a copy: the entry outlives nothing it points to
    int64_t created_ns = 0;
    std::optional<int64_t> started_ns, completed_ns;  // as noted on the entry itself
    bool start_reached = false;  // its start event was seen reached (not noted: see above)
    std::optional<double> duration_ms;
    bool retired = false;
    bool work = false;          // a Work: it has events
    bool end_recorded = false;  // a never-recorded event reads as reached: query it only after
    cudaEvent_t start = nullptr, end = nullptr;
  };
  struct Status {
    int64_t enqueued = -1, started = -1, completed = -1;
  };
  void Run();
  void Poll(int64_t now_ns);                  // under mu_
  bool TimedOut(int64_t now_ns) const;        // under mu_
  void Release(Entry& e);                     // destroys the entry's events
  Entry* Find(int64_t record_id);             // under mu_; null when overwritten
  std::vector<const Entry*> InOrder() const;  // under mu_: oldest first
  bool WriteFile(const std::string& path, const std::string& data) const;
  void WriteDumps(const char* why);  // not under mu_; once
  void Write(const char* why);       // not under mu_; every time
  bool DumpRequested();              // something was written into the pipe

  std::atomic<bool> dumped_{false};

  Options o_;
  std::mutex mu_;
  std::vector<FrGroup> groups_;
  std::vector<std::pair<int64_t, Status>> status_;  // by pg_id
  std::vector<Entry> ring_;
  size_t next_ = 0;  // where the next entry goes once the ring is full
  int64_t next_id_ = 0;
  int64_t last_created_ns_ = 0;
  std::string thread_id_;
  std::string pipe_path_;
  int pipe_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct TrainerOptions;
// The rank's Flight Recorder as the trainer's options ask for it; null when they ask for none.
std::unique_ptr<FlightRecorder> FlightRecorderFor(const TrainerOptions& o);

}  // namespace trainer
