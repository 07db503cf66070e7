#include "rscore/comm_hash.h"

#include <gtest/gtest.h>

namespace rs {
namespace {

// Reference fold written independently: byte-wise little-endian word assembly.
uint64_t ReferenceFold(const unsigned char* id) {
  uint64_t s = 0x72616e6b73636f70ULL;
  for (int w = 0; w < 16; ++w) {
    uint64_t word = 0;
    for (int b = 0; b < 8; ++b) word |= static_cast<uint64_t>(id[w * 8 + b]) << (8 * b);
    uint64_t z = (s ^ word) + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    s = z ^ (z >> 31);
  }
  return s;
}

TEST(CommHash, SplitMix64KnownValue) {
  // splitmix64 with state 0 produces 0xe220a8397b1dcdaf as its first output.
  EXPECT_EQ(SplitMix64(0), 0xe220a8397b1dcdafULL);
}

TEST(CommHash, MatchesReferenceAndDependsOnEveryByte) {
  unsigned char id[128];
  for (int i = 0; i < 128; ++i) id[i] = static_cast<unsigned char>(i * 7 + 3);
  uint64_t h = CommIdHash(id);
  EXPECT_EQ(h, ReferenceFold(id));
  for (int i : {0, 63, 127}) {
    unsigned char copy[128];
    std::memcpy(copy, id, 128);
    copy[i] ^= 1;
    EXPECT_NE(CommIdHash(copy), h) << "byte " << i;
  }
}

TEST(CommHash, SplitDependsOnColorAndIndexOnly) {
  EXPECT_EQ(SplitCommIdHash(42, 1, 0), SplitCommIdHash(42, 1, 0));
  EXPECT_NE(SplitCommIdHash(42, 1, 0), SplitCommIdHash(42, 2, 0));
  EXPECT_NE(SplitCommIdHash(42, 1, 0), SplitCommIdHash(42, 1, 1));
  EXPECT_NE(SplitCommIdHash(42, 1, 0), SplitCommIdHash(43, 1, 0));
}

}  // namespace
}  // namespace rs
