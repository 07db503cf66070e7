#include "recorder/interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>

namespace rs::rec {

int PrefixLength(const uint8_t* mask, int bytes) {
  int n = 0;
  for (int i = 0; i < bytes; ++i) {
    for (int b = 7; b >= 0; --b) {
      if (!(mask[i] & (1u << b))) return n;
      ++n;
    }
  }
  return n;
}

rs::Result<std::vector<InterfaceAddress>> ListInterfaceAddresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return rs::Error(std::string("cannot list network interfaces (getifaddrs): ") +
                     std::strerror(errno));
  }
  std::vector<InterfaceAddress> out;
  for (ifaddrs* ifa = list; ifa; ifa = ifa->ifa_next) {
    if (!ifa->ifa_addr) continue;
    int af = ifa->ifa_addr->sa_family;
    if (af != AF_INET && af != AF_INET6) continue;
    InterfaceAddress a;
    a.ifname = ifa->ifa_name ? ifa->ifa_name : "";
    char buf[INET6_ADDRSTRLEN] = {};
    if (af == AF_INET) {
      a.family = "ipv4";
      auto* sin = reinterpret_cast<sockaddr_in*>(ifa->ifa_addr);
      inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf));
      if (ifa->ifa_netmask) {
        auto* m = reinterpret_cast<sockaddr_in*>(ifa->ifa_netmask);
        a.prefix_len = PrefixLength(reinterpret_cast<const uint8_t*>(&m->sin_addr), 4);
      }
    } else {
      a.family = "ipv6";
      auto* sin6 = reinterpret_cast<sockaddr_in6*>(ifa->ifa_addr);
      inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof(buf));
      if (ifa->ifa_netmask) {
        auto* m = reinterpret_cast<sockaddr_in6*>(ifa->ifa_netmask);
        a.prefix_len = PrefixLength(reinterpret_cast<const uint8_t*>(&m->sin6_addr), 16);
      }
    }
    a.address = buf;
    out.push_back(std::move(a));
  }
  freeifaddrs(list);
  return out;
}

rs::Result<void> WriteInterfaces(rs::Db& db, const std::string& node,
                                 const std::vector<InterfaceAddress>& addrs,
                                 std::optional<uint64_t> netns) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("INSERT INTO interfaces(node, ifname, family, address, prefix_len, "
                              "netns) VALUES (?, ?, ?, ?, ?, ?)"));
  std::optional<int64_t> ns;
  if (netns) ns = static_cast<int64_t>(*netns);
  for (const auto& a : addrs) {
    st.Bind(1, node).Bind(2, a.ifname).Bind(3, a.family).Bind(4, a.address);
    st.Bind(5, a.prefix_len).Bind(6, ns);
    RETURN_IF_ERROR(st.Run());
  }
  return rs::Ok();
}

}  // namespace rs::rec
