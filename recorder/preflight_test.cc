#include "recorder/preflight.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace rs::rec {
namespace {

TEST(Preflight, RootOnly) {
  EXPECT_TRUE(CheckRoot(0).ok());
  auto r = CheckRoot(1000);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("root"), std::string::npos);
  EXPECT_NE(r.error().message().find("sudo"), std::string::npos);
}

TEST(Preflight, MissingOrEmptyBtf) {
  auto missing = CheckKernelBtf("/nonexistent/btf/vmlinux");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("/nonexistent/btf/vmlinux"), std::string::npos);
  EXPECT_NE(missing.error().message().find("CONFIG_DEBUG_INFO_BTF"), std::string::npos);
  char path[] = "/tmp/rs_btf.XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  auto empty = CheckKernelBtf(path);
  EXPECT_FALSE(empty.ok());
  close(fd);
  std::remove(path);
}

}  // namespace
}  // namespace rs::rec
