// For test code that runs in a forked child: returns the failing line as the child's exit
// status (a gtest assertion cannot cross the fork), and says which check failed.
#pragma once

#include <cstdio>

#define CHILD_CHECK(cond)                                                          \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      std::fprintf(stderr, "child check failed: %s (line %d)\n", #cond, __LINE__); \
      return __LINE__ % 250 + 1;                                                   \
    }                                                                              \
  } while (0)
