// The Flight Recorder tables of a merged db (fr_dumps, process_groups, fr_entries) as the hang
// engine's input (wait_graph.h): per rank its entries with their outcome, per process group its
// members in group-rank order.
//
// What an entry means, by backend (its profiling name's prefix):
//   nccl  'completed' completed; retired and not completed failed ("a retired but not
//         completed event has timed out", FlightRecorder.hpp); else pending
//   gloo  'retired' ended, finished or failed alike, else pending (ProcessGroupGloo::runLoop
//         retires after the work ran, errors included; its entries have no events and stay
//         'scheduled': measured on PyTorch 2.14)
// The operations of a coalesced group are recorded without events and stay 'scheduled'; the
// 'coalesced' entry after them, with the same sequence, carries the group's state
// (ProcessGroupNCCL::endCoalescing; PyTorch's own fr_trace matches them so): they take it.
// A dump's ring wrapped where its first record_id is above 0 (ids count from 0, the oldest are
// overwritten), and lost entries in between where its ids have gaps (a dump of active entries
// only).
// A group's members: pg_config's list (group rank i is the i-th). Where the merged db has none
// for a group its entries name, they are pg_config's entry with an empty name if that is the
// only one and holds every rank using the group (PyTorch 2.14's gloo records the default
// group's ranks before the group is named), else the ranks whose entries name it; a note says
// which.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/wait_graph.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {

struct FrGroupInfo {
  int64_t id = 0;  // process_groups.id
  std::string name, desc, label;
  std::optional<int64_t> comm_id_hash;
};

struct FrDumpInfo {
  std::string node;  // '' where no recording saw the rank
  int64_t pid = 0;
};

struct FrJob {
  wait::Input input;
  std::vector<FrGroupInfo> groups;      // parallel to input.groups
  std::map<int64_t, FrDumpInfo> dumps;  // by rank
  std::vector<std::string> versions;    // each once
  int unaligned_dumps = 0;
  std::vector<int64_t> missing_ranks;  // members of a process group without a dump
  std::vector<std::string> notes;      // how membership was found, where it was not listed
};

// Empty (no dumps) for a db without Flight Recorder tables or rows.
rs::Result<FrJob> ReadFrJob(rs::Db& db);

// "node1 rank 2", or "rank 2" where no recording saw it.
std::string FrRankLabel(const FrJob& job, int64_t rank);

}  // namespace rs::analyzer
