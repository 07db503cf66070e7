#include "report_render.h"

namespace analyzer {

rs::Result<ReportFormat> ParseReportFormat(const std::string& name) {
  if (name == "text") return ReportFormat::kText;
  if (name == "json") return ReportFormat::kJson;
  if (name == "markdown" || name == "md") return ReportFormat::kMarkdown;
  if (name == "html") return ReportFormat::kHtml;
  return rs::Error("--format '" + name + "' is not one of text, json, markdown, html");
}

std::string Render(const Report& r, ReportFormat f) {
  switch (f) {
    case ReportFormat::kJson:
      return RenderJson(r);
    case ReportFormat::kMarkdown:
      return RenderMarkdown(r);
    case ReportFormat::kHtml:
      return RenderHtml(r);
    case ReportFormat::kText:
      break;
  }
  return RenderText(r);
}

std::string StragglerLabel(const Straggler& s) {
  std::string rank = s.rank ? "rank " + std::to_string(*s.rank) : "";
  if (s.node.empty()) return rank.empty() ? "unknown rank" : rank;
  return rank.empty() ? s.node : s.node + " " + rank;
}

}  // namespace analyzer
