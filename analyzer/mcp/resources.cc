#include "analyzer/mcp/resources.h"

#include <sstream>

#include "analyzer/mcp/tool_bounds.h"
#include "analyzer/query.h"
#include "analyzer/report_render.h"

namespace rs::analyzer::mcp {
namespace {

rs::Result<std::string> SchemaText(Recording& rec) {
  ASSIGN_OR_RETURN(rs::Db * db, rec.QueryDb());
  db->RestartDeadline(kAnalysisTimeLimitNs);  // counts every table's rows
  std::ostringstream out;
  RETURN_IF_ERROR(PrintSchema(*db, out));
  ASSIGN_OR_RETURN(rs::Statement st,
                   db->Prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT"
                               " LIKE 'sqlite\\_%' ESCAPE '\\' UNION ALL SELECT name FROM"
                               " sqlite_temp_master WHERE type = 'view'"));
  std::vector<std::string> names;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    names.push_back(st.Text(0));
  }
  for (const std::string& name : names) {
    out << "\n" << name << ":\n";
    RETURN_IF_ERROR(PrintTableSchema(*db, name, out));
  }
  return out.str();
}

rs::Result<std::string> ReportText(Recording& rec) {
  rec.BeginCall(kAnalysisTimeLimitNs);
  ASSIGN_OR_RETURN(const Report* r, rec.GetReport());
  return RenderText(*r);
}

}  // namespace

std::vector<Resource> AllResources() {
  return {{"rankscope://schema", "schema", "Tables and columns",
           "The recording's tables and views with their row counts and meanings, then every "
           "table's and view's columns with type and meaning: what the query tool can read.",
           "text/plain", SchemaText},
          {"rankscope://report", "report", "The text report",
           "The report of rankscope-analyze: verdict, stragglers and causes with evidence, hang, "
           "clock bounds, per-node lateness, notes.",
           "text/plain", ReportText}};
}

}  // namespace rs::analyzer::mcp
