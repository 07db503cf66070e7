// Every capture source the recorder runs, in start order.
#pragma once

#include <memory>
#include <vector>

#include "recorder/options.h"
#include "recorder/probe.h"

namespace rs::rec {

// The probes of the sources --sources selects (all by default); a source left out is a probe
// that starts nothing and reports 'off'.
std::vector<std::unique_ptr<Probe>> MakeProbes(const RecorderOptions& opts);
// Every source's probe, whatever --sources says.
std::vector<std::unique_ptr<Probe>> MakeAllProbes(const RecorderOptions& opts);

}  // namespace rs::rec
