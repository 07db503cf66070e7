// The resources of `rankscope-analyze mcp`: documents an assistant reads whole, as text.
//   rankscope://schema  the tables and views with their meanings, then every one's columns
//                       (what `rankscope-analyze schema INPUT [TABLE]` prints)
//   rankscope://report  the report as text (`rankscope-analyze report INPUT`)
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "analyzer/mcp/recording.h"
#include "rscore/result.h"

namespace rs::analyzer::mcp {

struct Resource {
  std::string uri, name, title, description, mime_type;
  std::function<rs::Result<std::string>(Recording&)> read;
};

std::vector<Resource> AllResources();

}  // namespace rs::analyzer::mcp
