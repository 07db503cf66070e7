#include "rscore/host_port.h"

#include <cctype>
#include <charconv>

namespace rs {
namespace {

bool HostChar(char c, bool bracketed) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ||
         (bracketed && c == ':');
}

}  // namespace

Result<HostPort> ParseHostPort(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  std::string_view host = text, port;
  const bool bracketed = !text.empty() && text.front() == '[';
  if (bracketed) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return Error(quoted + ": no ']'");
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return Error(quoted + ": ':' after ']'");
      port = text.substr(close + 2);
      if (port.empty()) return Error(quoted + ": no port after ':'");
    }
  } else if (const size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    if (text.find(':') != colon) {
      return Error(quoted + ": an IPv6 address goes in brackets ([fd00::5]:7443)");
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (port.empty()) return Error(quoted + ": no port after ':'");
  }
  if (bracketed && host.empty()) return Error(quoted + ": no address in the brackets");
  for (char c : host) {
    if (!HostChar(c, bracketed)) return Error(quoted + ": not a host name or address");
  }
  HostPort out;
  out.host = std::string(host);
  if (!port.empty()) {
    int p = 0;
    auto r = std::from_chars(port.data(), port.data() + port.size(), p);
    if (r.ec != std::errc() || r.ptr != port.data() + port.size() || p <= 0 || p > 65535) {
      return Error(quoted + ": the port is not 1-65535");
    }
    out.port = p;
  }
  return out;
}

std::string FormatHostPort(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace rs
