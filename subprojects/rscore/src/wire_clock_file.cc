#include "rscore/wire_clock_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace rs {
namespace {

constexpr const char* kFormat = "rankscope-wire-clocks";
constexpr int kVersion = 1;

}  // namespace

std::string EncodeWireClocks(const std::vector<WireClock>& clocks) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const WireClock& c : clocks) {
    nlohmann::ordered_json n;
    n["node"] = c.node;
    n["address"] = c.address;
    n["offset_ns"] = c.offset_ns;
    n["bound_ns"] = c.bound_ns;
    n["rtt_ns"] = c.rtt_ns;
    n["measured_ns"] = c.measured_ns;
    n["exchanges"] = c.exchanges;
    nodes.push_back(std::move(n));
  }
  nlohmann::ordered_json doc;
  doc["format"] = kFormat;
  doc["version"] = kVersion;
  doc["nodes"] = std::move(nodes);
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<std::vector<WireClock>> DecodeWireClocks(const std::string& text) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Error("not a JSON object");
  if (!doc.contains("format") || doc["format"] != kFormat) {
    return Error(std::string("not a wire clock file (\"format\" is not \"") + kFormat + "\")");
  }
  if (!doc.contains("version") || !doc["version"].is_number_integer() ||
      doc["version"].get<int>() != kVersion) {
    return Error("wire clock file version " +
                 (doc.contains("version") ? doc["version"].dump() : "?") + " is not " +
                 std::to_string(kVersion));
  }
  if (!doc.contains("nodes") || !doc["nodes"].is_array()) return Error("\"nodes\" is not an array");
  std::vector<WireClock> out;
  for (const auto& n : doc["nodes"]) {
    if (!n.is_object()) return Error("an entry of \"nodes\" is not an object");
    WireClock c;
    auto text_field = [&](const char* k, std::string& v) -> Result<void> {
      if (!n.contains(k) || !n[k].is_string()) {
        return Error(std::string("a node entry has no text \"") + k + "\"");
      }
      v = n[k].get<std::string>();
      return Ok();
    };
    auto int_field = [&](const char* k, int64_t& v) -> Result<void> {
      if (!n.contains(k) || !n[k].is_number_integer()) {
        return Error(std::string("a node entry has no integer \"") + k + "\"");
      }
      v = n[k].get<int64_t>();
      return Ok();
    };
    RETURN_IF_ERROR(text_field("node", c.node));
    RETURN_IF_ERROR(text_field("address", c.address));
    RETURN_IF_ERROR(int_field("offset_ns", c.offset_ns));
    RETURN_IF_ERROR(int_field("bound_ns", c.bound_ns));
    RETURN_IF_ERROR(int_field("rtt_ns", c.rtt_ns));
    RETURN_IF_ERROR(int_field("measured_ns", c.measured_ns));
    int64_t exchanges = 0;
    RETURN_IF_ERROR(int_field("exchanges", exchanges));
    c.exchanges = static_cast<int>(exchanges);
    if (c.bound_ns < 0 || c.rtt_ns < 0) return Error("node " + c.node + ": a negative bound");
    out.push_back(std::move(c));
  }
  return out;
}

Result<void> WriteWireClockFile(const std::string& path, const std::vector<WireClock>& clocks) {
  const std::string text = EncodeWireClocks(clocks);
  const std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(tmp, errno);
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Error e = ErrnoError(tmp, errno);
      close(fd);
      unlink(tmp.c_str());
      return e;
    }
    off += static_cast<size_t>(n);
  }
  if (close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e = ErrnoError(path, errno);
    unlink(tmp.c_str());
    return e;
  }
  return Ok();
}

Result<std::vector<WireClock>> ReadWireClockFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return ErrnoError(path, errno);
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return Error(path + ": read failed");
  auto clocks = DecodeWireClocks(s.str());
  if (!clocks.ok()) return clocks.error().Wrap(path);
  return clocks;
}

}  // namespace rs
