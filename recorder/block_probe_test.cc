#include "recorder/block_probe.h"

#include <gtest/gtest.h>

#include <cstring>

#include "recorder/test_db.h"

namespace rec {
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

}  // namespace
}  // namespace rec
