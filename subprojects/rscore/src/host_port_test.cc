#include "rscore/host_port.h"

#include <gtest/gtest.h>

namespace rs {
namespace {

TEST(HostPort, ReadsNamesAddressesAndPorts) {
  struct Case {
    const char* text;
    const char* host;
    int port;
  } ok[] = {
      {"node3", "node3", 0},
      {"node3:7443", "node3", 7443},
      {"10.0.0.3:1", "10.0.0.3", 1},
      {":7443", "", 7443},
      {"[::1]", "::1", 0},
      {"[fd00::5]:65535", "fd00::5", 65535},
      {"gpu-a_01.local", "gpu-a_01.local", 0},
  };
  for (const Case& c : ok) {
    auto r = ParseHostPort(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message();
    EXPECT_EQ(r->host, c.host) << c.text;
    EXPECT_EQ(r->port, c.port) << c.text;
    if (c.port && !r->host.empty()) {
      // Written back as it is read.
      auto again = ParseHostPort(FormatHostPort(r->host, r->port));
      ASSERT_TRUE(again.ok()) << FormatHostPort(r->host, r->port);
      EXPECT_EQ(again->host, r->host);
      EXPECT_EQ(again->port, r->port);
    }
  }
  EXPECT_EQ(FormatHostPort("fd00::5", 7443), "[fd00::5]:7443");
  EXPECT_EQ(FormatHostPort("node3", 7443), "node3:7443");
}

TEST(HostPort, RefusesWhatCouldBeReadTwoWays) {
  struct Case {
    const char* text;
    const char* says;
  } bad[] = {
      // fd00::5:7443 is an address, or fd00::5 and a port: brackets say which.
      {"fd00::5", "brackets"},      {"fd00::5:7443", "brackets"},
      {"[::1", "no ']'"},           {"[::1]7443", "':' after ']'"},
      {"[]:7443", "no address"},    {"node3:", "no port"},
      {"[::1]:", "no port"},        {"node3:0", "1-65535"},
      {"node3:65536", "1-65535"},   {"node3:74x", "1-65535"},
      {"no de", "not a host name"}, {"node/3:7443", "not a host name"},
  };
  for (const Case& c : bad) {
    auto r = ParseHostPort(c.text);
    ASSERT_FALSE(r.ok()) << c.text << " read as " << r->host << " port " << r->port;
    EXPECT_NE(r.error().message().find(c.says), std::string::npos)
        << c.text << ": " << r.error().message();
    EXPECT_EQ(r.error().message().rfind(std::string("'") + c.text + "'", 0), 0u)
        << r.error().message();
  }
}

}  // namespace
}  // namespace rs
