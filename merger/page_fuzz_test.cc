// Seeded random cases of the page-path fuzzer (page_fuzz.cc): a few byte changes to one node's
// bundle, mostly inside its table pages, then the merge through parts and splicing; any broken
// promise aborts. The seed is printed; RANKSCOPE_TEST_SEED=N repeats a run, and
// RANKSCOPE_PAGE_FUZZ_CASES=N runs N cases instead of 30.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <random>
#include <vector>

#include "page_fuzz.h"

namespace merge::fuzz {
namespace {

TEST(PageFuzz, ChangedImagesNeverBreakTheMerge) {
  const char* env = std::getenv("RANKSCOPE_TEST_SEED");
  const uint64_t seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::cout << "seed " << seed << " (RANKSCOPE_TEST_SEED=" << seed << " repeats it)\n";
  std::mt19937_64 rng(seed);
  const size_t size = SeedImage().size();
  ASSERT_GT(size, 8192u);
  EXPECT_EQ(RunCase(nullptr, 0), Outcome::kMerged);  // unchanged
  int outcomes[3] = {0, 0, 0};
  const char* n = std::getenv("RANKSCOPE_PAGE_FUZZ_CASES");  // more cases by hand
  const int cases = n ? std::atoi(n) : 30;
  for (int c = 0; c < cases; ++c) {
    std::vector<uint8_t> data;
    const int changes = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < changes; ++k) {
      // Past the first page (the schema) mostly: the event tables' pages are what the page path
      // reads and writes.
      uint32_t off = static_cast<uint32_t>(rng() % 10 ? 4096 + rng() % (size - 4096) : rng() % size);
      uint8_t x = static_cast<uint8_t>(1u << (rng() % 8));
      if (rng() % 4 == 0) x = static_cast<uint8_t>(rng() | 1);
      for (int b = 0; b < 4; ++b) data.push_back(static_cast<uint8_t>(off >> (8 * b)));
      data.push_back(x);
    }
    ++outcomes[static_cast<int>(RunCase(data.data(), data.size()))];
  }
  std::cout << "merged " << outcomes[0] << ", changed bundle skipped " << outcomes[1]
            << ", refused " << outcomes[2] << "\n";
  // Changed pages that pass the input checks are what the page path must survive.
  EXPECT_GT(outcomes[0], 0);
}

}  // namespace
}  // namespace merge::fuzz
