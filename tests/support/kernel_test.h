// Gate for tests that need root and eBPF. Outside CI they skip with a one-line how-to;
// when the CI environment variable is set a skip is a failure (CI is root: it must run them).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#define REQUIRE_ROOT_OR_SKIP()                                                              \
  do {                                                                                      \
    if (geteuid() != 0) {                                                                   \
      if (std::getenv("CI") != nullptr) {                                                   \
        FAIL() << "kernel test needs root, and CI is set: it must not be skipped";          \
      }                                                                                     \
      GTEST_SKIP() << "needs root and eBPF: run 'sudo meson test -C build --suite kernel'"; \
    }                                                                                       \
  } while (0)

// For conditions other than root (a missing library, tool or kernel feature).
#define SKIP_UNLESS_OR_FAIL_IN_CI(cond, why)                                     \
  do {                                                                           \
    if (!(cond)) {                                                               \
      if (std::getenv("CI") != nullptr) FAIL() << "CI must not skip: " << (why); \
      GTEST_SKIP() << (why);                                                     \
    }                                                                            \
  } while (0)
