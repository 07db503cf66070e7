// PyTorch Flight Recorder dumps, read without executing anything.
//
// A dump is what ProcessGroupNCCL writes per rank when a collective times out (or on request):
// a pickle (the default; read with rscore/pickle.h, which refuses anything that would import
// or call) or JSON (_dump_nccl_trace_json). The file name ends in the rank's global number
// (`nccl_trace_rank_3`, the prefix from TORCH_FR_DUMP_TEMP_FILE or
// TORCH_NCCL_DEBUG_INFO_TEMP_FILE); the dump itself does not hold it.
//
// Schema versions 2.0 to 2.10 are read: every entry field that a version may lack is optional
// (is_p2p, thread_id/thread_name, retired, duration_ms — only with TORCH_NCCL_ENABLE_TIMING —,
// frames — pickle only, and only with stack traces —, comm_lib_version). 2.10 is the newest
// PyTorch writes (FlightRecorder.hpp's version_val on main); PyTorch raises the minor version
// when it adds fields and the major when it changes one, so a later 2.x is read as 2.10 with a
// note (the fields it added are not read) and another major is refused. What differs between
// the formats is normalized here: JSON writes 0 for a time not yet discovered where the pickle
// writes None, and strings for pg_status's numbers.
//
// gloo (ProcessGroupGloo) writes the same structure with other meanings: how a dump was
// recorded (backend, timing, how much of the ring is left) is read by fr_recording.h, and its
// pg_config mapped to the groups its entries name by fr_groups.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rscore/result.h"

namespace rs::merge::fr {

struct Frame {
  std::string name, file;
  int64_t line = 0;
};

struct Entry {
  int64_t record_id = -1;         // position in the rank's ring of entries
  int64_t pg_id = -1;             // the process's own number of the process group
  std::string pg_name, pg_desc;   // process_group: (name, desc)
  int64_t collective_seq_id = 0;  // per process group, collectives and coalesced groups
  int64_t p2p_seq_id = 0;         // per process group, point-to-point operations
  int64_t op_id = -1;             // per operation, inside coalesced groups too
  std::string profiling_name;     // 'nccl:all_reduce', 'nccl:send 0->1'
  std::string op;                 // as nccl_events.op: 'ALL_REDUCE', 'SEND', ... ('COALESCED')
  bool is_p2p = false;
  std::optional<int64_t> src, dst;  // group ranks of a send/recv ('send 0->1': 0 -> 1)
  std::string state;                // 'enqueued' (FR: scheduled) | 'started' | 'completed'
  int64_t time_created_ns = 0;      // the host's wall clock
  std::optional<int64_t> time_discovered_started_ns, time_discovered_completed_ns;
  std::optional<double> duration_ms;
  std::optional<int64_t> timeout_ms;
  std::optional<bool> retired;
  std::string input_sizes, output_sizes;    // JSON text: lists of shapes
  std::string input_dtypes, output_dtypes;  // JSON text: PyTorch's names ('Float', ...)
  std::optional<int64_t> input_numel;       // elements over all inputs
  std::string datatype;                     // the first input's, as nccl_events.datatype
  std::string thread_id, thread_name;
  std::vector<Frame> frames;  // innermost first
};

struct ProcessGroup {
  std::string name, desc;
  std::vector<int64_t> ranks;  // global ranks
  // Where `ranks` comes from (process_groups.members): 'listed' (a pg_config entry under the
  // group's name) or 'default_group' (gloo's unnamed entry tied to the default group:
  // fr_groups.h).
  std::string members = "listed";
};

struct PgStatus {
  std::string pg_id;
  std::optional<int64_t> last_enqueued, last_started, last_completed;
};

struct Dump {
  std::string file;
  std::string format;  // 'pickle' | 'json'
  std::string version;
  std::string comm_lib_version;
  int64_t rank = -1;
  std::vector<Entry> entries;
  std::vector<ProcessGroup> groups;
  std::vector<PgStatus> status;
  std::string nccl_comm_state;  // JSON text; empty when absent
  // How it was recorded (fr_recording.h): the backend ('nccl', 'gloo', another profiling-name
  // prefix; empty: no entry says), whether CUDA timing events were on ('on', 'off', 'partial',
  // 'unknown', 'none'), and which part of the ring of entries the dump holds.
  std::string backend;
  std::string timing;
  std::optional<int64_t> first_record_id, last_record_id;
  std::string ring;  // 'complete' | 'wrapped' | 'filtered'; empty: no record ids
  // What the merge says about this dump as warnings: a newer version read as the newest known,
  // a pg_config entry that names no group, several backends in one dump.
  std::vector<std::string> notes;
  // Values cut to fit the merged database ("entries[3].profiling_name (314572800 bytes)"):
  // see fr_bounds.h.
  std::vector<std::string> truncated;
};

// The stored forms of a dump's values (fr_dumps.pg_status, process_groups.ranks, stacks.frames).
std::string StatusJson(const std::vector<PgStatus>& status);
std::string RanksJson(const std::vector<int64_t>& ranks);
std::string StackText(const std::vector<Frame>& frames);

// What a file's first bytes say it is: a Flight Recorder pickle or JSON dump, or neither.
//   pickle  protocol 2-5: PROTO (0x80) and the protocol; protocol 1: EMPTY_DICT ('}'), how
//           Python's pickle starts a dict there; protocol 0: MARK and DICT ("(d"), likewise
//   JSON    '{', after an optional UTF-8 byte order mark (Python's 'utf-8-sig', Windows
//           editors) and whitespace
enum class Sniff { kNotDump, kPickle, kJson };
Sniff SniffFile(const std::string& path);

// The global rank at the end of a dump's file name ('nccl_trace_rank_12' -> 12).
std::optional<int64_t> RankFromFileName(std::string_view path);

// Reads and checks one dump, its values bounded (fr_bounds.h). Errors name the file and what
// is wrong (for a pickle: the byte offset and the opcode refused).
rs::Result<Dump> ReadDump(const std::string& path);

// Parses an already decoded/loaded dump body (exposed for tests).
rs::Result<Dump> ParseDump(std::string_view data, std::string format, const std::string& name,
                           int64_t rank);

// PyTorch's profiling name -> nccl_events.op ('nccl:all_reduce' -> 'ALL_REDUCE').
std::string OpFromProfilingName(std::string_view profiling_name);
// PyTorch's dtype name -> nccl_events.datatype ('Float' -> 'float32').
std::string DatatypeFromTorch(std::string_view dtype);

}  // namespace rs::merge::fr
