// Test and benchmark inputs for rankscope-export: synthetic cluster bundles and a merged
// db built from them the simple way (CreateSchema(kMerged) + ATTACH + INSERT SELECT, the
// known clock offsets subtracted), so the exporter is tested on both input kinds without
// depending on rankscope-merge.
#pragma once

#include <string>
#include <vector>

#include "rscore/result.h"
#include "synth_bundle.h"

namespace rs::exporter::testing {

// Writes spec's bundles into `dir` and merges them into `merged_path`. Returns the bundles.
Result<std::vector<std::string>> WriteInputs(const synth::ClusterSpec& spec, const std::string& dir,
                                             const std::string& merged_path);

}  // namespace rs::exporter::testing
