#include "analyzer/mcp/tools.h"

namespace rs::analyzer::mcp {

std::vector<Tool> AllTools() {
  return {SummaryTool(),
          FindStragglersTool(),
          HangReportTool(),
          ExplainCollectiveTool(),
          SlowestCollectivesTool(),
          NodeTimelineTool(),
          QueryTool(),
          ExportTraceTool()};
}

}  // namespace rs::analyzer::mcp
