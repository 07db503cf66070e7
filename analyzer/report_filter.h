// `report --from/--to/--nodes/--ranks/--comm`: the report of a part of the recording. The
// event tables are narrowed by TEMP views of the same names, which SQLite resolves before the
// file's own tables, so every analysis sees only the chosen rows without knowing of filters.
// The views read the chosen values from TEMP tables filled by bound statements (rs::RowWindow
// for time and nodes, as the exporter's window; a view holds no parameters):
//   --from/--to (rs::TimeArg; +offsets from the recording's start): rows whose timestamp_ns
//     lies in [from, to], every event table;
//   --nodes: rows of those nodes, every table with a node column;
//   --ranks: NCCL, CUDA and GPU rows of those ranks' processes (rank known from nccl_events);
//   --comm: NCCL and GPU rows of that communicator (comm_id_hash, hex 0x... or decimal).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rscore/bundle.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"
#include "rscore/time_arg.h"

namespace rs::analyzer {

struct ReportFilter {
  std::optional<rs::TimeArg> from, to;
  std::vector<std::string> nodes;
  std::vector<int64_t> ranks;
  std::optional<int64_t> comm;
  bool empty() const { return !from && !to && nodes.empty() && ranks.empty() && !comm.has_value(); }
};

// Parses --ranks (comma-separated, ranges 0-3) and --comm (0x hex or decimal).
rs::Result<std::vector<int64_t>> ParseRanks(const std::vector<std::string>& values);
rs::Result<int64_t> ParseComm(const std::string& text);

// The recording's start: the zero of every +offset (a bundle's start, or a merged database's
// start_ns in its metadata).
int64_t RecordingStartNs(const rs::OpenedDb& opened);

// Creates the views on `db` (opened read-only: TEMP objects still work). Returns one sentence
// for the report's notes ("only node1, node3 between ... and ..."); an error names an unknown
// node, or a window that holds no event.
rs::Result<std::string> ApplyReportFilter(rs::Db& db, const ReportFilter& f,
                                          int64_t recording_start_ns);

}  // namespace rs::analyzer
