// Checks that merger tests make of a merged database (gtest assertions; one copy for every
// merger test that runs a merge).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "merger/clock_alignment.h"
#include "merger/merge.h"
#include "merger/test_bundles.h"
#include "rscore/sqlite.h"

namespace rs::merge::testing {

// The integer `sql` returns; -1 (and a failure) when it fails.
int64_t Int(rs::Db& db, const std::string& sql);

struct Merged {
  MergeResult result;
  std::string path;
  std::string log;
};

// Merges `inputs` into dir/merged.rsdb (a failure when the merge fails).
Merged RunMerge(const TempDir& dir, std::vector<std::string> inputs, MergeOptions opt = {});

// Every table's rows in = rows out + rows skipped, and every table holds exactly the rows
// merge_counts says were written.
void ExpectCountsReconcile(rs::Db& db);

// Every event row's timestamp_ns is its local_timestamp_ns corrected by the node's stored
// alignment.
void ExpectAlignmentApplied(rs::Db& db);

// Every gpu_ops row of the bundles `bundles` (node `nodes[i]` in the merged db) is in `db`
// with its timestamp_ns, device_start_ns and device_end_ns corrected by the node's stored
// alignment (NULL kept NULL). Returns the rows compared.
int64_t ExpectGpuOpsAligned(rs::Db& db, const std::vector<std::string>& bundles);

// The node's stored alignment (clock_alignment row).
NodeAlignment StoredAlignment(rs::Db& db, const std::string& node);

// Every row of every table, as text, sorted: equal for equal databases.
std::vector<std::string> Contents(rs::Db& db);

}  // namespace rs::merge::testing
