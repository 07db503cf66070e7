// The tools of `rankscope-analyze mcp`: each declares its arguments (inputSchema), the shape of
// its result (outputSchema, JSON Schema) and runs on the recording. A result is
// structuredContent plus a short text of it; an rs::Error becomes a tool error (isError) whose
// message the assistant can act on. Every result is bounded (tool_bounds.h): lists are cut
// with `truncated: true` and a `hint` saying how to narrow the question.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "analyzer/mcp/arguments.h"
#include "analyzer/mcp/json_rpc.h"
#include "analyzer/mcp/recording.h"
#include "rscore/result.h"

namespace rs::analyzer::mcp {

struct ToolOutput {
  Json structured;   // matches the tool's output_schema
  std::string text;  // a few lines for people (content[0])
};

struct ToolContext {
  std::string trace_dir;  // where export_trace writes (--trace-dir)
};

struct Tool {
  std::string name, title, description;
  std::vector<Param> params;
  Json output_schema;
  bool read_only = true;  // false: writes a file (annotations.readOnlyHint)
  std::function<rs::Result<ToolOutput>(Recording&, const Args&, const ToolContext&)> run;
};

// A 'comm' argument: comm_id_hash as the report prints it (0x26017f0f7f0ca554) or in decimal;
// the error names the argument and both forms (tool_collective.cc).
rs::Result<int64_t> CommArgument(const std::string& text);

// Every tool, in the order tools/list gives them.
std::vector<Tool> AllTools();

// One per file: tool_summary.cc, tool_findings.cc (find_stragglers, hang_report),
// tool_collective.cc, tool_slowest.cc, tool_timeline.cc, tool_query.cc, tool_export.cc.
Tool SummaryTool();
Tool FindStragglersTool();
Tool HangReportTool();
Tool ExplainCollectiveTool();
Tool SlowestCollectivesTool();
Tool NodeTimelineTool();
Tool QueryTool();
Tool ExportTraceTool();

}  // namespace rs::analyzer::mcp
