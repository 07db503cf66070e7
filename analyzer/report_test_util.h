// Test support: synthetic clusters as a merged database, built the simple way (rows copied
// from the synthetic bundles with ATTACH + INSERT SELECT, clock_alignment rows given by the
// test) so the report can be tested on merged input independently of rankscope-merge.
#pragma once

#include <cstdint>
#include <string>

#include <vector>

#include "analyzer/collectives.h"
#include "rscore/result.h"
#include "tests/support/synth_bundle.h"

namespace rs::analyzer::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents by the destructor.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes the cluster's bundles into dir and merges them into dir/cluster.rsdb. Every node
// gets clock_alignment (offset_ns 0: timestamps kept as recorded, error_bound_ns as given).
rs::Result<std::string> WriteMergedCluster(const synth::ClusterSpec& spec, const std::string& dir,
                                           int64_t error_bound_ns);

// Calls grouped by (comm, seq) into data's collectives as LoadCollectives does (participants
// already added), their arrivals set (SetArrivals): hand-built jobs for the lateness tests.
void GroupCalls(CollectiveData& data, std::vector<NcclCall> calls);

// Seed for randomized tests: $RANKSCOPE_TEST_SEED, else the time. Printed by the caller.
uint64_t TestSeed();

}  // namespace rs::analyzer::testing
