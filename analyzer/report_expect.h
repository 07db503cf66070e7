// Test support with gtest expectations (report_test_util stays free of gtest: the benchmark
// links it): the report of a recording, the report of an edited synthetic cluster.
#pragma once

#include <cstdint>
#include <string>

#include "analyzer/report.h"
#include "tests/support/synth_bundle.h"

namespace rs::analyzer::testing {

// The report of a recording (bundle or merged database); a failure to open or analyse it
// fails the calling test and gives an empty report.
Report ReportOf(const std::string& path);

// The report of a synthetic cluster (WriteMergedCluster with error_bound_ns) after `sql`
// changed its merged database.
Report EditedReport(const synth::ClusterSpec& spec, const std::string& sql, int64_t error_bound_ns);

// SQL making `node`'s ranks enter the all-reduces that also match `also` (" AND ...") 6 ms
// late, leaving with everyone (the others wait for them in the blocking call).
std::string NodeLate(const std::string& node, const std::string& also);

// The synthetic hang: node1's local rank 0 stops entering collectives (its seed printed).
synth::ClusterSpec HangOnNode1();

}  // namespace rs::analyzer::testing
