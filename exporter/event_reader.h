// Reads the event tables of a bundle or merged db as one stream in a total, explicit
// order: timestamp, then longer slices first across tables, then table, then id. One prepared
// statement per table, merged k-way: memory stays bounded by the number of tables, not rows.
// gpu_ops rows come in enqueue order (their timestamp_ns); an input of an earlier recorder
// has no gpu_ops table and its stream is exactly the other six tables'. A merged database with
// PyTorch Flight Recorder dumps adds their entries (fr_entries, at time_created_ns), read with
// their dump's and group's facts; an input without dumps has none.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rscore/result.h"
#include "rscore/row_window.h"
#include "rscore/sqlite.h"

namespace rs::exporter {

enum class Table : uint8_t { kNccl, kCuda, kTcp, kSched, kBlock, kProcess, kGpu, kFr };
inline constexpr int kTableCount = 8;
const char* TableName(Table table);

// Column layout of every row (the SELECTs in event_reader.cc produce exactly this).
namespace col {
inline constexpr int kId = 0, kNode = 1, kTs = 2, kDur = 3, kPid = 4, kTid = 5, kName = 6;
namespace nccl {
inline constexpr int kRank = 7, kNranks = 8, kCommIdHash = 9, kSeq = 10, kCount = 11,
                     kDatatype = 12, kReduceOp = 13, kBytes = 14, kPeer = 15, kRoot = 16, kRet = 17,
                     kState = 18;
}
namespace cuda {
inline constexpr int kLibrary = 7, kBytes = 8, kStream = 9, kRet = 10, kState = 11;
}
namespace tcp {
inline constexpr int kFamily = 7, kSaddr = 8, kDaddr = 9, kSport = 10, kDport = 11, kSeq = 12,
                     kSegments = 13, kState = 14, kCaState = 15, kErr = 16;
}
namespace sched {
inline constexpr int kCpu = 7, kOtherPid = 8, kOtherTid = 9, kOtherComm = 10;
}
namespace block {
inline constexpr int kDev = 7, kRwbs = 8, kBytes = 9, kComm = 10;
}
namespace process {
inline constexpr int kPpid = 7, kComm = 8, kFilename = 9, kExitCode = 10;
}
// gpu_ops: kTs is the host enqueue, kDur 0, kTid the enqueuing thread (may be NULL), kName op.
namespace gpu {
inline constexpr int kRank = 7, kNranks = 8, kCommIdHash = 9, kSeq = 10, kCount = 11,
                     kDatatype = 12, kBytes = 13, kPeer = 14, kRoot = 15, kAlgorithm = 16,
                     kProtocol = 17, kChannels = 18, kDeviceStart = 19, kDeviceEnd = 20,
                     kClockError = 21, kNetBytesSent = 22, kNetBytesRecv = 23, kState = 24,
                     kUserTag = 25, kInitialSync = 26, kFinalSync = 27, kKernelSymmetric = 28;
}
// fr_entries: kTs is time_created_ns, kDur the time to the discovered completion (0 where none
// was discovered), kNode / kPid the recorded process of the dump's rank (NULL: none), kTid
// the global rank, kName the op ('ALL_REDUCE').
namespace fr {
inline constexpr int kPg = 7, kPgName = 8, kPgDesc = 9, kSeq = 10, kIsP2p = 11, kState = 12,
                     kProfilingName = 13, kSrc = 14, kDst = 15, kCount = 16, kDatatype = 17,
                     kInputSizes = 18, kStarted = 19, kCompleted = 20, kRetired = 21,
                     kDeviceNs = 22, kBackend = 23, kTiming = 24;
}
}  // namespace col

// What the stream needs to know before it starts.
struct InputSummary {
  int64_t first_ts = 0;  // earliest event start in the filter
  int64_t last_ts = 0;   // latest event end (start + duration) in the filter
  int64_t rows = 0;      // rows that pass the filter, all tables
  std::array<int64_t, kTableCount> rows_per_table{};
  // Where every collective (comm_id_hash, seq) that passes the filter is drawn, counted: the
  // device slices of its ranks' gpu_ops rows that ran on the GPU, and the host calls of its
  // ranks without gpu_ops (the flow linking the collective goes through exactly these).
  std::map<std::pair<uint64_t, int64_t>, int> collective_size;
  // Processes (node, pid) with gpu_ops rows in the filter: their collectives are drawn on
  // the device track. Empty for an input without gpu_ops.
  std::set<std::pair<std::string, int64_t>> gpu_processes;
};

struct ProcessInfo {
  std::optional<int64_t> rank;
  std::string comm;
};
using ProcessMap = std::map<std::pair<std::string, int64_t>, ProcessInfo>;

// Earliest event timestamp in the whole input.
Result<std::optional<int64_t>> FirstEventTimestamp(Db& db);
// The recording's start (metadata start_ns of a bundle or a merged database; the first event
// where it has none): the zero of relative --from/--to, as in every tool.
Result<int64_t> RecordingStartNs(Db& db);
// Node names present in the input, sorted.
Result<std::vector<std::string>> ListNodes(Db& db);
Result<InputSummary> Summarize(Db& db, const RowWindow& filter);
// Earliest event start and latest event end of the whole input; nullopt: no events.
Result<std::optional<std::pair<int64_t, int64_t>>> EventSpan(Db& db);
// The name of every block device with requests in the input, by (node, dev); "" where the
// input has none (see BlockDeviceNames).
Result<std::map<std::pair<std::string, std::string>, std::string>> ReadBlockDevices(Db& db);
Result<ProcessMap> ReadProcesses(Db& db);

// Whether a NCCL op is a collective that all ranks of a communicator enter with the same
// seq (point-to-point SEND / RECV count seq per peer and are not linked).
bool IsLinkedCollective(std::string_view op);
// Whether a NCCL call hands work to the GPU (collectives, SEND / RECV; not communicator
// management or group brackets): the calls gpu_ops rows can belong to.
bool RunsOnDevice(std::string_view op);

class EventReader {
 public:
  static Result<EventReader> Open(Db& db, const RowWindow& filter);
  EventReader(EventReader&&) noexcept = default;
  EventReader& operator=(EventReader&&) noexcept = default;

  // Moves to the next row in stream order; false at the end.
  Result<bool> Next();
  Table table() const { return static_cast<Table>(current_); }
  // The current row; columns as in namespace col.
  const Statement& row() const { return cursors_[current_].st; }

 private:
  struct Cursor {
    Statement st;
    bool present = true;  // false: the input has no such table (gpu_ops of old recorders)
    bool valid = false;
    bool started = false;
    int64_t ts = 0, dur_key = 0, id = 0;
  };
  EventReader() = default;
  Result<void> Advance(Cursor& c);

  std::array<Cursor, kTableCount> cursors_;
  int current_ = -1;
};

}  // namespace rs::exporter
