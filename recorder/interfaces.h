// The recorder's network interfaces and addresses (table interfaces): lets the analysis map
// tcp_events addresses to nodes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::rec {

struct InterfaceAddress {
  std::string ifname;
  std::string family;  // 'ipv4' | 'ipv6'
  std::string address;
  int prefix_len = 0;
};

// getifaddrs(3) of the calling thread's network namespace (IPv4 and IPv6 only).
rs::Result<std::vector<InterfaceAddress>> ListInterfaceAddresses();
// Prefix length of a netmask in network byte order (number of leading one bits).
int PrefixLength(const uint8_t* mask, int bytes);

rs::Result<void> WriteInterfaces(rs::Db& db, const std::string& node,
                                 const std::vector<InterfaceAddress>& addrs,
                                 std::optional<uint64_t> netns);

}  // namespace rs::rec
