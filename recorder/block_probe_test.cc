#include "recorder/block_probe.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "recorder/test_db.h"

namespace rs::rec {
namespace {

using testing::Bytes;
using testing::TestDb;

TEST(BlockOpFromRwbs, FollowsTheKernelLetters) {
  EXPECT_EQ(BlockOpFromRwbs("R"), "read");
  EXPECT_EQ(BlockOpFromRwbs("RA"), "read");
  EXPECT_EQ(BlockOpFromRwbs("W"), "write");
  EXPECT_EQ(BlockOpFromRwbs("WS"), "write");
  EXPECT_EQ(BlockOpFromRwbs("WFS"), "write");  // FUA write
  EXPECT_EQ(BlockOpFromRwbs("FWS"), "write");  // preflush + write
  EXPECT_EQ(BlockOpFromRwbs("F"), "flush");
  EXPECT_EQ(BlockOpFromRwbs("FF"), "flush");
  EXPECT_EQ(BlockOpFromRwbs("FN"), "flush");
  EXPECT_EQ(BlockOpFromRwbs("FS"), "flush");
  EXPECT_EQ(BlockOpFromRwbs("D"), "discard");
  EXPECT_EQ(BlockOpFromRwbs("DS"), "discard");
  EXPECT_EQ(BlockOpFromRwbs("DE"), "discard");
  EXPECT_EQ(BlockOpFromRwbs("N"), "other");
  EXPECT_EQ(BlockOpFromRwbs(""), "other");
}

TEST(FormatDev, SplitsKernelDevT) {
  EXPECT_EQ(FormatDev((7u << 20) | 3), "7:3");
  EXPECT_EQ(FormatDev((259u << 20) | 0xfffff), "259:1048575");
}

TEST(BlockEventWriter, DecodesRow) {
  TestDb t;
  auto w = BlockEventWriter::Create(t.db, "n1", &t.ids, &t.clock);
  ASSERT_TRUE(w.ok());
  rs_block_event e{};
  e.ts_ns = 1'100'000'000'000;
  e.duration_ns = 250'000;
  e.sector = 123456789012ULL;
  e.dev = (7u << 20) | 5;
  e.bytes = 1 << 20;
  e.pid = 4242;
  std::strcpy(e.rwbs, "WS");
  std::strcpy(e.comm, "dd");
  ASSERT_TRUE(w->Write(Bytes(e)).ok());
  std::strcpy(e.rwbs, "R");
  e.pid = 0;
  std::memset(e.comm, 0, sizeof(e.comm));
  ASSERT_TRUE(w->Write(Bytes(e)).ok());
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM block_events"), 2);
  EXPECT_EQ(t.Text("SELECT dev || ' ' || op || ' ' || rwbs || ' ' || comm FROM block_events "
                   "ORDER BY id LIMIT 1"),
            "7:5 write WS dd");
  EXPECT_EQ(t.Int("SELECT bytes FROM block_events LIMIT 1"), 1 << 20);
  EXPECT_EQ(t.Int("SELECT sector FROM block_events LIMIT 1"), 123456789012LL);
  EXPECT_EQ(t.Int("SELECT duration_ns FROM block_events LIMIT 1"), 250'000);
  EXPECT_EQ(t.Int("SELECT timestamp_ns FROM block_events LIMIT 1"),
            TestDb::kOffset + 1'100'000'000'000);
  EXPECT_EQ(t.Int("SELECT pid FROM block_events ORDER BY id LIMIT 1"), 4242);
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM block_events WHERE op = 'read' AND pid IS NULL AND "
                  "comm IS NULL"),
            1);
  EXPECT_FALSE(w->Write(Bytes(e).first(10)).ok());
}

// A fake /sys: dev/block/MAJ:MIN as the kernel lays it out (a symlink to the device's
// directory, whose uevent names it).
class FakeSys {
 public:
  FakeSys() {
    char tmpl[] = "/tmp/rs-fake-sys-XXXXXX";
    root_ = mkdtemp(tmpl);
    Run("mkdir -p '" + root_ + "/dev/block' '" + root_ + "/devices/nvme0n1' '" + root_ +
        "/devices/sdq'");
  }
  ~FakeSys() { Run("rm -rf '" + root_ + "'"); }
  const std::string& root() const { return root_; }
  // dev/block/MAJ:MIN -> devices/NAME, with a uevent holding DEVNAME=devname unless empty.
  void Add(const std::string& majmin, const std::string& name, const std::string& devname) {
    if (!devname.empty()) {
      std::ofstream(root_ + "/devices/" + name + "/uevent")
          << "MAJOR=259\nMINOR=0\nDEVNAME=" << devname << "\nDEVTYPE=disk\n";
    }
    EXPECT_EQ(symlink(("../../devices/" + name).c_str(), (root_ + "/dev/block/" + majmin).c_str()),
              0);
  }

 private:
  static void Run(const std::string& cmd) { EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd; }
  std::string root_;
};

TEST(BlockDeviceName, UeventDevnameElseTheLinkName) {
  FakeSys sys;
  sys.Add("259:0", "nvme0n1", "nvme0n1");
  sys.Add("65:0", "sdq", "");  // no uevent: the name of the linked directory
  EXPECT_EQ(BlockDeviceName((259u << 20) | 0, sys.root()), "nvme0n1");
  EXPECT_EQ(BlockDeviceName((65u << 20) | 0, sys.root()), "sdq");
  EXPECT_EQ(BlockDeviceName((8u << 20) | 0, sys.root()), "");  // not on this node
}

TEST(BlockEventWriter, WritesTheNameOfEveryDeviceSeen) {
  FakeSys sys;
  sys.Add("259:0", "nvme0n1", "nvme0n1");
  sys.Add("65:0", "sdq", "");
  TestDb t;
  auto w = BlockEventWriter::Create(t.db, "n1", &t.ids, &t.clock);
  ASSERT_TRUE(w.ok());
  rs_block_event e{};
  e.ts_ns = 1'100'000'000'000;
  std::strcpy(e.rwbs, "R");
  for (uint32_t dev : {(259u << 20) | 0, (65u << 20) | 0, (259u << 20) | 0, (8u << 20) | 0}) {
    e.dev = dev;
    ASSERT_TRUE(w->Write(Bytes(e)).ok());
  }
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM block_devices"), 0);  // written at the end
  ASSERT_TRUE(w->WriteDeviceNames(sys.root()).ok());
  // One row per device with a name; 8:0 has none on this node and is left out.
  EXPECT_EQ(t.Text("SELECT group_concat(node || ' ' || dev || ' ' || name, ', ') FROM (SELECT *"
                   " FROM block_devices ORDER BY dev)"),
            "n1 259:0 nvme0n1, n1 65:0 sdq");
  ASSERT_TRUE(w->WriteDeviceNames(sys.root()).ok());  // again: no duplicates
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM block_devices"), 2);
}

}  // namespace
}  // namespace rs::rec
