#include "recorder/interfaces.h"

#include <gtest/gtest.h>

#include "recorder/test_db.h"

namespace rs::rec {
namespace {

TEST(PrefixLength, CountsLeadingOnes) {
  const uint8_t m24[4] = {255, 255, 255, 0};
  const uint8_t m0[4] = {0, 0, 0, 0};
  const uint8_t m20[4] = {255, 255, 240, 0};
  uint8_t m64[16] = {};
  for (int i = 0; i < 8; ++i) m64[i] = 255;
  EXPECT_EQ(PrefixLength(m24, 4), 24);
  EXPECT_EQ(PrefixLength(m0, 4), 0);
  EXPECT_EQ(PrefixLength(m20, 4), 20);
  EXPECT_EQ(PrefixLength(m64, 16), 64);
}

TEST(Interfaces, LoopbackIsListedAndWritten) {
  auto addrs = ListInterfaceAddresses();
  ASSERT_TRUE(addrs.ok()) << addrs.error().message();
  bool lo = false;
  for (const auto& a : *addrs) {
    if (a.ifname == "lo" && a.family == "ipv4") {
      lo = true;
      EXPECT_EQ(a.address, "127.0.0.1");
      EXPECT_EQ(a.prefix_len, 8);
    }
  }
  EXPECT_TRUE(lo) << "no IPv4 loopback address in this network namespace";
  testing::TestDb t;
  ASSERT_TRUE(WriteInterfaces(t.db, "n1", *addrs, 42).ok());
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM interfaces"), static_cast<int64_t>(addrs->size()));
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM interfaces WHERE netns = 42 AND node = 'n1'"),
            static_cast<int64_t>(addrs->size()));
}

}  // namespace
}  // namespace rs::rec
