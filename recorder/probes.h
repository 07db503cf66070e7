// Every capture source the recorder runs, in start order.
#pragma once

#include <memory>
#include <vector>

#include "recorder/options.h"
#include "recorder/probe.h"

namespace rec {

std::vector<std::unique_ptr<Probe>> MakeProbes(const RecorderOptions& opts);

}  // namespace rec
