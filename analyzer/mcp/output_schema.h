// Building blocks of the tools' outputSchema (JSON Schema, keywords that draft-07 and 2020-12
// read alike, no $schema: MCP's default dialect), and the schemas of the report's objects as
// `rankscope-analyze report --format json` prints them (report_json.cc).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analyzer/mcp/json_rpc.h"

namespace rs::analyzer::mcp::schema {

Json String(const std::string& description = "");
Json Integer(const std::string& description = "");
Json Number(const std::string& description = "");
Json Boolean(const std::string& description = "");
// The same, or null.
Json OrNull(Json s);
Json Enum(const std::vector<std::string>& values, const std::string& description = "");
Json ArrayOf(Json items, const std::string& description = "");
// An object with exactly these properties, all required but `optional` ones.
Json Object(std::vector<std::pair<std::string, Json>> properties,
            const std::vector<std::string>& optional = {}, const std::string& description = "");
// An object whose keys are names and whose values all follow `values`.
Json MapOf(Json values, const std::string& description = "");

// A tool's result: `properties` plus `truncated` (and `hint`, present when cut).
Json Result(std::vector<std::pair<std::string, Json>> properties,
            const std::vector<std::string>& optional = {});

// The report's objects (report --format json): a finding of `stragglers` / `observations`, the
// `hang` object, a row of `per_rank`.
Json Finding();
Json Hang();
Json RankStats();

}  // namespace rs::analyzer::mcp::schema
