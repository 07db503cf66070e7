#include "rscore/file_checksum.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdio>
#include <fstream>

namespace rs {
namespace {

TEST(FileChecksumTest, MatchesXxhsum) {
  char path[] = "/tmp/checksum-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  // Known XXH64 values (seed 0): the empty input and "abc" (xxHash's reference vectors).
  auto empty = FileXxh64(path);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, "ef46db3751d8e999");
  { std::ofstream(path) << "abc"; }
  auto abc = FileXxh64(path);
  ASSERT_TRUE(abc.ok());
  EXPECT_EQ(*abc, "44bc2cf5ad770999");
  // Larger than the read buffer: the same as hashing it in one piece.
  std::string big(3 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4097) big[i] = static_cast<char>(i);
  { std::ofstream(path, std::ios::binary) << big; }
  auto whole = FileXxh64(path);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, Xxh64Hex(XXH64(big.data(), big.size(), 0)));
  std::remove(path);
  auto missing = FileXxh64(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find(path), std::string::npos);
}

}  // namespace
}  // namespace rs
