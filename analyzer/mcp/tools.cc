#include "analyzer/mcp/tools.h"

namespace analyzer::mcp {

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

}  // namespace analyzer::mcp
