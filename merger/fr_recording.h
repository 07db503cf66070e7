// How a Flight Recorder dump was recorded, read from the dump itself: what its states and
// times can mean depends on it (stored in fr_dumps: backend, timing, first/last_record_id,
// ring). Each rule rests on PyTorch's source (torch/csrc/distributed/c10d, main):
//
// backend   The prefix of the entries' profiling names: ProcessGroupNCCL names its work
//           'nccl:<op>' ('nccl:all_reduce', 'nccl:send 0->1'), ProcessGroupGloo 'gloo:<op>'
//           ('gloo:all_reduce', AsyncWork's profilingTitle). pg_config has no backend field
//           (FlightRecorderDetail.hpp getPgConfig writes name, desc and ranks only) and each
//           backend records into a recorder of its own (FlightRecorder<CUDAEvent> for NCCL,
//           FlightRecorder<c10::Event> for gloo), so one dump holds one backend's entries.
//           Entries of several prefixes are stored as 'mixed', with a note.
//
// timing    Whether an entry's 'started' state and discovered start time exist at all.
//   nccl    WorkNCCL creates its start CUDA event only with timing on (TORCH_NCCL_ENABLE_TIMING,
//           desync debug, or enableCollectivesTiming() at run time); without it the recorder
//           has no start event to query, so entries go from 'scheduled' straight to
//           'completed' and never carry time_discovered_started_ns or duration_ms.
//           update_state queries the start event before the end event, so with timing on a
//           completed entry always has a discovered start. Hence:
//             'on'       an entry has duration_ms or a discovered start, and none says off;
//             'off'      a completed entry without a discovered start, and none says on
//                        ('scheduled' then means "not known to have completed", not "not
//                        started on the GPU");
//             'partial'  both (timing was switched on while the job ran);
//             'unknown'  neither (no entry completed or started).
//   gloo    'none': ProcessGroupGloo::enqueue records with no start or end event (nullptr), so
//           every entry stays 'scheduled' without discovered times or duration, and runLoop
//           retires an entry after it ran whether it finished or failed (a timeout throws
//           inside run()): 'retired' means "gloo is done with it", not "timed out".
//   other   'unknown'.
//
// ring      FlightRecorder keeps the last TORCH_FR_BUFFER_SIZE (formerly
//           TORCH_NCCL_TRACE_BUFFER_SIZE; default 2000) entries in a ring; record_id counts
//           every entry since the recorder started or was reset (reset_all restarts it at 0)
//           and the dump lists the kept ones oldest first. With first_record_id and
//           last_record_id of the dump's first and last entry:
//             'complete'  ids 0, 1, 2, ... without a gap: every entry recorded is there;
//             'wrapped'   consecutive ids from first_record_id > 0: the ring overwrote the
//                         entries before it (or the dump held only active entries,
//                         TORCH_INCLUDE_ONLY_ACTIVE), so a rank's earlier operations are
//                         unknown, not absent;
//             'filtered'  gaps or ids out of order: only some entries were dumped (an
//                         only-active dump leaves out the completed ones);
//             empty       no entry has a record_id.
#pragma once

#include "merger/flight_recorder.h"

namespace rs::merge::fr {

// Sets dump.backend, timing, first/last_record_id and ring from its entries; a dump of
// several backends gets a note.
void DescribeRecording(Dump& dump);

// 'nccl' for 'nccl:all_reduce', "" for a name without a prefix.
std::string BackendOf(std::string_view profiling_name);

}  // namespace rs::merge::fr
