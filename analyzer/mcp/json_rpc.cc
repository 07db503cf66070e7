#include "analyzer/mcp/json_rpc.h"

#include <unistd.h>

#include <cerrno>

namespace rs::analyzer::mcp {
namespace {

Message Invalid(int code, std::string why, Json id = nullptr) {
  Message m;
  m.kind = Message::Kind::kInvalid;
  m.error_code = code;
  m.error = std::move(why);
  m.id = std::move(id);
  return m;
}

}  // namespace

Message ParseMessage(std::string_view line) {
  Json j = Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Invalid(kParseError,
                   "parse error: the line is not one JSON value (MCP's stdio transport takes one "
                   "JSON-RPC message per line)");
  }
  if (j.is_array()) {
    return Invalid(kInvalidRequest,
                   "JSON-RPC batches are not supported: send one message per line");
  }
  if (!j.is_object()) return Invalid(kInvalidRequest, "a JSON-RPC message is a JSON object");
  Json id = nullptr;
  const auto id_it = j.find("id");
  const bool has_id = id_it != j.end();
  if (has_id) {
    if (!id_it->is_string() && !id_it->is_number_integer()) {
      return Invalid(kInvalidRequest, "\"id\" must be a string or an integer (MCP: never null)");
    }
    id = *id_it;
  }
  const auto version = j.find("jsonrpc");
  if (version == j.end() || *version != "2.0") {
    return Invalid(kInvalidRequest, "\"jsonrpc\" must be \"2.0\"", id);
  }
  const auto method = j.find("method");
  if (method == j.end()) {
    if (has_id && (j.contains("result") || j.contains("error"))) {
      Message m;
      m.kind = Message::Kind::kResponse;
      m.id = std::move(id);
      return m;
    }
    return Invalid(kInvalidRequest, "no \"method\": neither a request nor a notification", id);
  }
  if (!method->is_string()) return Invalid(kInvalidRequest, "\"method\" must be a string", id);
  Message m;
  m.kind = has_id ? Message::Kind::kRequest : Message::Kind::kNotification;
  m.id = std::move(id);
  m.method = method->get<std::string>();
  if (const auto params = j.find("params"); params != j.end()) {
    if (!params->is_object() && !params->is_array()) {
      return Invalid(kInvalidRequest, "\"params\" must be an object", m.id);
    }
    m.params = std::move(*params);  // moved: a copy of deep nesting would recurse
  }
  return m;
}

std::string Dump(const Json& j) {
  return j.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

std::string ResultLine(const Json& id, const Json& result) {
  Json reply = {{"jsonrpc", "2.0"}, {"id", id}, {"result", result}};
  return Dump(reply);
}

std::string ErrorLine(const Json& id, int code, const std::string& message) {
  Json reply = {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
  return Dump(reply);
}

bool LineReader::Fill() {
  if (end_ || error_) return false;
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n > 0) {
      buf_.append(chunk, static_cast<size_t>(n));
      return true;
    }
    if (n == 0) {
      end_ = true;
      return false;
    }
    if (errno == EINTR) continue;
    error_ = true;
    return false;
  }
}

LineReader::Status LineReader::Next(std::string& line) {
  bool skipping = false;  // inside a line that is too long: dropped up to its newline
  size_t scanned = pos_;
  for (;;) {
    const size_t nl = buf_.find('\n', scanned);
    if (nl != std::string::npos) {
      const size_t begin = pos_;
      pos_ = nl + 1;
      if (skipping || nl - begin > max_) return Status::kTooLong;
      line.assign(buf_, begin, nl - begin);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return Status::kLine;
    }
    if (buf_.size() - pos_ > max_) {  // keep nothing of it
      skipping = true;
      buf_.clear();
      pos_ = 0;
    }
    scanned = buf_.size() - pos_;  // what is read of this line: compacted to the front
    buf_.erase(0, pos_);
    pos_ = 0;
    if (!Fill()) {
      if (error_) return Status::kError;
      if (skipping) return Status::kTooLong;
      if (pos_ < buf_.size()) {  // a last line without a newline
        line.assign(buf_, pos_, std::string::npos);
        pos_ = buf_.size();
        return line.size() > max_ ? Status::kTooLong : Status::kLine;
      }
      return Status::kEnd;
    }
  }
}

}  // namespace rs::analyzer::mcp
