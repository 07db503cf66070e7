// `rankscope-fleet collect`: every node's bundles that overlap [since, until], downloaded in
// parallel into DIR (resumed where a partial download is left, checked against the node's
// XXH64), laid out for rankscope-merge: DIR/NODE.rsb, and DIR/CUT-ID/NODE.rsb for the
// always-on ring's cuts. Beside them clock_offsets.json: each node's clock as measured over the
// wire, which rankscope-merge compares with its own alignment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/fleet/fan_out.h"
#include "analyzer/fleet/node_list.h"
#include "rscore/result.h"

namespace rs::fleet {

struct FleetCollect {
  std::vector<NodeAddress> nodes;
  ClientAuth auth;
  FanOutOptions fan;                   // per_request: a download takes as long as it takes
  int64_t since_ns = 0, until_ns = 0;  // 0: open
  std::string dir;
  // The nodes' summaries of their bundles (GET /v1/summaries: each node summarizes its own,
  // rscore/summarize.h) as DIR/NODE.rss, instead of the raw bundles.
  bool summaries = false;
};

struct CollectResult {
  std::vector<std::string> warnings;  // one per node that failed or had nothing to give
  int nodes_ok = 0;
  int bundles = 0, already_there = 0, resumed = 0;
  int64_t bytes = 0, transferred = 0;
  std::vector<std::string> dirs;  // the directories that got bundles (each a merge's input)
};

// Errors: DIR cannot be made or written; no node gave a bundle.
rs::Result<CollectResult> RunFleetCollect(const FleetCollect& c);

// Where a listed bundle goes under `dir`: its directory as the node names it, and the
// node's name as the file name. An error for a name that would leave `dir` (absolute, "..")
// or a node name that is not one.
rs::Result<std::string> CollectPath(const std::string& dir, const std::string& name,
                                    const std::string& node, const std::string& ext = ".rsb");

}  // namespace rs::fleet
