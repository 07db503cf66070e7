// JSON-RPC 2.0 as MCP's stdio transport carries it: one UTF-8 JSON message per line (no
// embedded newline), requests with an id (a string or an integer, never null), notifications
// without one. Parsing never throws: a line that is no message gives Message::kInvalid with the
// error code to answer (-32700 parse error, -32600 invalid request).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rs::analyzer::mcp {

// Keys stay in the order they were added, so replies read as they are built.
using Json = nlohmann::ordered_json;

// JSON-RPC's error codes, and MCP's for a resource that does not exist.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kResourceNotFound = -32002;

struct Message {
  enum class Kind {
    kRequest,       // method and id: answer it
    kNotification,  // method, no id: never answered
    kResponse,      // result or error with an id: an answer to a request of ours (we send none)
    kInvalid,       // answer with error_code, to `id` where one could be read (else null)
  };
  Kind kind = Kind::kInvalid;
  Json id;  // null where absent or unreadable
  std::string method;
  Json params;  // null when absent
  int error_code = 0;
  std::string error;
};

Message ParseMessage(std::string_view line);

// The answer lines (without the newline).
std::string ResultLine(const Json& id, const Json& result);
std::string ErrorLine(const Json& id, int code, const std::string& message);

// `j` as one line of JSON: bytes that are not UTF-8 become U+FFFD (as every JSON rankscope
// writes, rscore/json.h), so the line is always valid.
std::string Dump(const Json& j);

// The lines of a file descriptor (standard input), each at most max_bytes long.
class LineReader {
 public:
  enum class Status { kLine, kTooLong, kEnd, kError };
  LineReader(int fd, size_t max_bytes) : fd_(fd), max_(max_bytes) {}
  // The next line without its newline (a last line without one too). kTooLong: a line longer
  // than max_bytes was skipped up to its newline; kError: read(2) failed (errno).
  Status Next(std::string& line);

 private:
  bool Fill();  // false at the end of input or on an error (error_ says which)
  int fd_;
  size_t max_;
  std::string buf_;
  size_t pos_ = 0;
  bool end_ = false, error_ = false;
};

}  // namespace rs::analyzer::mcp
