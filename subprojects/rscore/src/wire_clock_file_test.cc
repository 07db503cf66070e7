#include "rscore/wire_clock_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace rs {
namespace {

std::vector<WireClock> Sample() {
  WireClock a;
  a.node = "node1";
  a.address = "10.0.0.1:7443";
  a.offset_ns = -1200;
  a.bound_ns = 95;
  a.rtt_ns = 190;
  a.measured_ns = 1764070681123456789;
  a.exchanges = 5;
  WireClock b = a;
  b.node = "node2";
  b.offset_ns = 4'000'000;
  return {a, b};
}

TEST(WireClockFileTest, WritesAndReadsBack) {
  char dir[] = "/tmp/wire-clock-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/" + kWireClockFileName;
  ASSERT_TRUE(WriteWireClockFile(path, Sample()).ok());
  auto back = ReadWireClockFile(path);
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].node, "node1");
  EXPECT_EQ((*back)[0].address, "10.0.0.1:7443");
  EXPECT_EQ((*back)[0].offset_ns, -1200);
  EXPECT_EQ((*back)[0].bound_ns, 95);
  EXPECT_EQ((*back)[0].rtt_ns, 190);
  EXPECT_EQ((*back)[0].measured_ns, 1764070681123456789);
  EXPECT_EQ((*back)[0].exchanges, 5);
  EXPECT_EQ((*back)[1].offset_ns, 4'000'000);
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0);  // nothing left beside it
  std::remove(path.c_str());
  rmdir(dir);
}

TEST(WireClockFileTest, ErrorsNameWhatIsWrong) {
  EXPECT_NE(DecodeWireClocks("[1]").error().message().find("not a JSON object"), std::string::npos);
  EXPECT_NE(DecodeWireClocks(R"({"format": "x"})").error().message().find("not a wire clock"),
            std::string::npos);
  EXPECT_NE(DecodeWireClocks(R"({"format": "rankscope-wire-clocks", "version": 9, "nodes": []})")
                .error()
                .message()
                .find("version 9"),
            std::string::npos);
  const std::string missing = R"({"format": "rankscope-wire-clocks", "version": 1,
      "nodes": [{"node": "n", "address": "a", "offset_ns": 1.5}]})";
  EXPECT_NE(DecodeWireClocks(missing).error().message().find("\"offset_ns\""), std::string::npos);
  auto r = ReadWireClockFile("/nonexistent/clock_offsets.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("/nonexistent/clock_offsets.json"), std::string::npos);
}

}  // namespace
}  // namespace rs
