// One reading of "HOST[:PORT]" for every tool that takes an address: the recorder's --serve,
// rankscope-serve --listen and rankscope-fleet's node lists and files.
#pragma once

#include <string>
#include <string_view>

#include "rscore/result.h"

namespace rs {

struct HostPort {
  std::string host;  // empty where the text gives none (":7443"): the caller decides
  int port = 0;      // 0 where the text gives none
};

// HOST is a name, an IPv4 address, or an IPv6 address in brackets ([fd00::5]:7443, [::1]):
// without brackets an IPv6 address is refused, since its last group could not be told from a
// port. Host names and addresses hold letters, digits, '.', '-', '_' (and ':' in brackets);
// PORT is 1-65535. Errors quote the text.
Result<HostPort> ParseHostPort(std::string_view text);

// HOST:PORT, an IPv6 address in brackets: what ParseHostPort reads back.
std::string FormatHostPort(const std::string& host, int port);

}  // namespace rs
