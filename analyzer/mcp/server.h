// The MCP server of `rankscope-analyze mcp`: the lifecycle (initialize with version
// negotiation, notifications/initialized, ping), tools/list and tools/call (tools.h),
// resources/list and resources/read (resources.h), over MCP's stdio transport (json_rpc.h).
// Requests are answered one at a time, in order; bad input of any kind gets an error reply and
// the server goes on; the end of standard input ends it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/mcp/json_rpc.h"
#include "analyzer/mcp/recording.h"
#include "analyzer/mcp/resources.h"
#include "analyzer/mcp/tools.h"

namespace rs::analyzer::mcp {

// The protocol revisions spoken, newest first: those of the official TypeScript SDK
// (@modelcontextprotocol/sdk 1.32: LATEST_PROTOCOL_VERSION and SUPPORTED_PROTOCOL_VERSIONS).
// A client's version in this list is answered with itself, any other with the newest.
inline constexpr std::array<const char*, 5> kProtocolVersions = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"};

// A message (a line) longer than this is refused unread.
inline constexpr size_t kMaxMessageBytes = 4 << 20;

struct ServerOptions {
  std::string version;    // the server's (serverInfo.version)
  std::string trace_dir;  // export_trace's directory
  bool verbose = false;   // one line on the log per request
};

class Server {
 public:
  Server(Recording& recording, ServerOptions options, std::ostream& log);

  // The answer to one line, without its newline; nothing for a notification, a response or a
  // blank line.
  std::optional<std::string> Handle(std::string_view line);
  // Answers the lines of `in_fd` on `out_fd` until the input ends (0) or reading or writing
  // fails (1, said on the log).
  int Serve(int in_fd, int out_fd);

  // The negotiated revision (the newest until initialize).
  const std::string& protocol_version() const { return version_; }
  int64_t requests() const { return requests_; }

 private:
  struct Reply {
    Json result;
    int code = 0;  // non-zero: a JSON-RPC error
    std::string message;
  };
  static Reply Ok(Json result) { return {std::move(result), 0, ""}; }
  static Reply Error(int code, std::string message) { return {nullptr, code, std::move(message)}; }

  Reply Dispatch(const Message& m);
  Reply Initialize(const Json& params);
  Reply ListTools(const Json& params) const;
  Reply CallTool(const Json& params);
  Reply ListResources(const Json& params) const;
  Reply ReadResource(const Json& params);
  // The negotiated revision is `version` or later (revisions are dates: they sort as text).
  bool AtLeast(std::string_view version) const { return version_ >= version; }

  Recording& recording_;
  ServerOptions options_;
  std::ostream& log_;
  std::vector<Tool> tools_;
  std::vector<Resource> resources_;
  std::string version_ = kProtocolVersions[0];
  int64_t requests_ = 0;
};

}  // namespace rs::analyzer::mcp
