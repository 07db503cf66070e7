#include "analyzer/mcp/server.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "analyzer/mcp/tool_bounds.h"
#include "rscore/cli.h"
#include "rscore/clock.h"

namespace rs::analyzer::mcp {
namespace {

// The revisions before 2025-06-18 know neither structuredContent nor outputSchema nor titles;
// annotations came with 2025-03-26.
constexpr std::string_view kStructuredSince = "2025-06-18";
constexpr std::string_view kAnnotationsSince = "2025-03-26";

Json TextContent(const std::string& text) {
  return Json::array({{{"type", "text"}, {"text", CutString(text, kMaxStringChars)}}});
}

Json ToolError(const std::string& message) {
  return {{"content", TextContent(message)}, {"isError", true}};
}

std::string Names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// A string member of `j`, or `otherwise`.
std::string StringOf(const Json& j, const char* key, const std::string& otherwise) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : otherwise;
}

bool WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Server::Server(Recording& recording, ServerOptions options, std::ostream& log)
    : recording_(recording),
      options_(std::move(options)),
      log_(log),
      tools_(AllTools()),
      resources_(AllResources()) {}

std::optional<std::string> Server::Handle(std::string_view line) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return std::nullopt;
  const Message m = ParseMessage(line);
  switch (m.kind) {
    case Message::Kind::kInvalid:
      log_ << "rankscope-analyze mcp: " << m.error << "\n";
      return ErrorLine(m.id, m.error_code, m.error);
    case Message::Kind::kResponse:  // we send no requests: nothing to match it with
      if (options_.verbose)
        log_ << "rankscope-analyze mcp: ignored a response (id " << Dump(m.id) << ")\n";
      return std::nullopt;
    case Message::Kind::kNotification:
      if (options_.verbose) log_ << "rankscope-analyze mcp: " << m.method << "\n";
      return std::nullopt;  // notifications/cancelled: a request is done before the next is read
    case Message::Kind::kRequest:
      break;
  }
  ++requests_;
  const int64_t started = rs::MonotonicNowNs();
  Reply reply;
  try {
    reply = Dispatch(m);
  } catch (const std::exception& e) {  // a bug of ours (nlohmann-json throws): said, going on
    reply = Error(kInternalError, std::string("internal error: ") + e.what());
  }
  if (options_.verbose || reply.code == kInternalError) {
    log_ << "rankscope-analyze mcp: " << m.method << " " << Dump(m.id) << ": "
         << (reply.code ? "error " + std::to_string(reply.code) + " " + reply.message : "ok")
         << " (" << rs::cli::FormatElapsed(rs::MonotonicNowNs() - started) << ")\n";
  }
  if (reply.code != 0) return ErrorLine(m.id, reply.code, reply.message);
  return ResultLine(m.id, reply.result);
}

Server::Reply Server::Dispatch(const Message& m) {
  if (!m.params.is_null() && !m.params.is_object()) {
    return Error(kInvalidParams, m.method + ": \"params\" must be an object");
  }
  static const Json kNoParams = Json::object();
  const Json& params = m.params.is_null() ? kNoParams : m.params;  // never copied (deep nesting)
  if (m.method == "initialize") return Initialize(params);
  if (m.method == "ping") return Ok(Json::object());
  if (m.method == "tools/list") return ListTools(params);
  if (m.method == "tools/call") return CallTool(params);
  if (m.method == "resources/list") return ListResources(params);
  if (m.method == "resources/read") return ReadResource(params);
  if (m.method == "resources/templates/list") return Ok({{"resourceTemplates", Json::array()}});
  return Error(kMethodNotFound,
               "method not found: " + m.method +
                   " (this server has initialize, ping, tools/list, tools/call, resources/list, "
                   "resources/read, resources/templates/list)");
}

Server::Reply Server::Initialize(const Json& params) {
  const auto asked = params.find("protocolVersion");
  if (asked == params.end() || !asked->is_string()) {
    return Error(kInvalidParams, "initialize: \"protocolVersion\" (a string) is required");
  }
  const std::string wanted = asked->get<std::string>();
  const bool known = std::find(kProtocolVersions.begin(), kProtocolVersions.end(), wanted) !=
                     kProtocolVersions.end();
  version_ = known ? wanted : kProtocolVersions[0];
  std::string client = "a client";
  if (auto info = params.find("clientInfo"); info != params.end() && info->is_object()) {
    client = StringOf(*info, "name", "a client") + " " + StringOf(*info, "version", "");
  }
  log_ << "rankscope-analyze mcp: " << client << " asked for protocol " << wanted << ", speaking "
       << version_ << "\n";
  Json server_info = {{"name", "rankscope-analyze"}, {"version", options_.version}};
  if (AtLeast(kStructuredSince)) server_info["title"] = "rankscope";
  Json result = {{"protocolVersion", version_},
                 {"capabilities",
                  {{"tools", {{"listChanged", false}}},
                   {"resources", {{"subscribe", false}, {"listChanged", false}}}}},
                 {"serverInfo", std::move(server_info)}};
  if (AtLeast(kAnnotationsSince)) {
    result["instructions"] =
        "Answers questions about one rankscope recording of a distributed GPU training job (" +
        recording_.name() +
        "): which node or rank held the job back, and why. Start with summary, then "
        "find_stragglers or hang_report; explain_collective and node_timeline show the detail "
        "behind a finding; query runs read-only SQL (columns in the resource rankscope://schema). "
        "Times are ISO 8601 UTC, ns since the epoch, or +offset from the recording's start "
        "(summary's start_utc).";
  }
  return Ok(std::move(result));
}

Server::Reply Server::ListTools(const Json& params) const {
  if (params.contains("cursor")) {
    return Error(kInvalidParams,
                 "tools/list: invalid cursor (this server lists every tool at once)");
  }
  Json tools = Json::array();
  for (const Tool& t : tools_) {
    Json j = {{"name", t.name}};
    if (AtLeast(kStructuredSince)) j["title"] = t.title;
    j["description"] = t.description;
    j["inputSchema"] = InputSchema(t.params);
    if (AtLeast(kStructuredSince)) j["outputSchema"] = t.output_schema;
    if (AtLeast(kAnnotationsSince)) {
      j["annotations"] = {{"readOnlyHint", t.read_only},
                          {"destructiveHint", false},
                          {"idempotentHint", t.read_only},
                          {"openWorldHint", false}};
    }
    tools.push_back(std::move(j));
  }
  return Ok({{"tools", std::move(tools)}});
}

Server::Reply Server::CallTool(const Json& params) {
  const auto name = params.find("name");
  if (name == params.end() || !name->is_string()) {
    return Error(kInvalidParams, "tools/call: \"name\" (a string) is required");
  }
  const Tool* tool = nullptr;
  std::vector<std::string> names;
  for (const Tool& t : tools_) {
    names.push_back(t.name);
    if (t.name == name->get<std::string>()) tool = &t;
  }
  if (tool == nullptr) {
    return Error(kInvalidParams,
                 "unknown tool '" + name->get<std::string>() + "'; the tools are " + Names(names));
  }
  static const Json kNoArguments;
  const auto given = params.find("arguments");
  const Json& arguments = given == params.end() ? kNoArguments : *given;
  // Arguments that do not fit the tool's inputSchema are a tool error (MCP 2025-11-25), which
  // the assistant sees and can correct.
  rs::Result<Args> args = Args::Check(tool->name, tool->params, arguments);
  if (!args.ok()) return Ok(ToolError(args.error().message()));
  rs::Result<ToolOutput> output = tool->run(recording_, *args, ToolContext{options_.trace_dir});
  if (!output.ok()) return Ok(ToolError(output.error().message()));
  Json structured = std::move(output->structured);
  FitResult(structured,
            "the result was too large: ask a narrower question (a shorter window, "
            "fewer nodes or kinds, a lower limit)");
  Json content = TextContent(output->text);
  Json result = Json::object();
  if (AtLeast(kStructuredSince)) {
    result["content"] = std::move(content);
    result["structuredContent"] = std::move(structured);
  } else {  // a client without structuredContent gets the JSON as a second text
    content.push_back({{"type", "text"}, {"text", Dump(structured)}});
    result["content"] = std::move(content);
  }
  result["isError"] = false;
  return Ok(std::move(result));
}

Server::Reply Server::ListResources(const Json& params) const {
  if (params.contains("cursor")) {
    return Error(kInvalidParams,
                 "resources/list: invalid cursor (every resource is listed at once)");
  }
  Json list = Json::array();
  for (const Resource& r : resources_) {
    Json j = {{"uri", r.uri}, {"name", r.name}};
    if (AtLeast(kStructuredSince)) j["title"] = r.title;
    j["description"] = r.description;
    j["mimeType"] = r.mime_type;
    list.push_back(std::move(j));
  }
  return Ok({{"resources", std::move(list)}});
}

Server::Reply Server::ReadResource(const Json& params) {
  const auto uri = params.find("uri");
  if (uri == params.end() || !uri->is_string()) {
    return Error(kInvalidParams, "resources/read: \"uri\" (a string) is required");
  }
  std::vector<std::string> uris;
  for (const Resource& r : resources_) {
    uris.push_back(r.uri);
    if (r.uri != uri->get<std::string>()) continue;
    rs::Result<std::string> text = r.read(recording_);
    if (!text.ok()) return Error(kInternalError, r.uri + ": " + text.error().message());
    return Ok({{"contents",
                Json::array({{{"uri", r.uri}, {"mimeType", r.mime_type}, {"text", *text}}})}});
  }
  return Error(kResourceNotFound, "resource not found: " + uri->get<std::string>() +
                                      " (there are " + Names(uris) + ")");
}

int Server::Serve(int in_fd, int out_fd) {
  LineReader reader(in_fd, kMaxMessageBytes);
  std::string line;
  for (;;) {
    std::optional<std::string> reply;
    switch (reader.Next(line)) {
      case LineReader::Status::kEnd:
        return 0;
      case LineReader::Status::kError:
        log_ << "rankscope-analyze mcp: reading standard input: " << std::strerror(errno) << "\n";
        return 1;
      case LineReader::Status::kTooLong:
        reply = ErrorLine(nullptr, kInvalidRequest,
                          "message longer than " + std::to_string(kMaxMessageBytes >> 20) +
                              " MiB: refused unread");
        log_ << "rankscope-analyze mcp: refused a message longer than " << (kMaxMessageBytes >> 20)
             << " MiB\n";
        break;
      case LineReader::Status::kLine:
        reply = Handle(line);
        break;
    }
    if (reply && !WriteAll(out_fd, *reply + "\n")) {
      log_ << "rankscope-analyze mcp: writing standard output: " << std::strerror(errno) << "\n";
      return 1;
    }
  }
}

}  // namespace rs::analyzer::mcp
