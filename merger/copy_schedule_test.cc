#include "copy_schedule.h"

#include <gtest/gtest.h>

namespace merge {
namespace {

TEST(DirectCopies, AllByTheWriterWithoutWorkers) {
  EXPECT_EQ(DirectCopies({100'000, 100'000, 100'000}, 0), 3u);
  EXPECT_EQ(DirectCopies({}, 1), 0u);
}

TEST(DirectCopies, WorkersTakeEqualInputsWhenCombiningIsCheaperThanCopying) {
  CopyCosts c{1.0, 0.6, 0};
  std::vector<int64_t> rows(4, 100'000);
  size_t direct = DirectCopies(rows, 1, c);
  EXPECT_GT(direct, 0u);  // the writer copies while the first part is written
  EXPECT_LT(direct, 4u);
  // Better than the writer alone, and than any other split.
  EXPECT_LT(EstimatedFinish(rows, direct, 1, c), EstimatedFinish(rows, 4, 1, c));
  for (size_t d = 0; d <= 4; ++d) {
    EXPECT_LE(EstimatedFinish(rows, direct, 1, c), EstimatedFinish(rows, d, 1, c)) << d;
  }
}

TEST(DirectCopies, NoPartsWhenCombiningCostsAsMuchAsCopying) {
  CopyCosts c{1.0, 1.0, 0};
  EXPECT_EQ(DirectCopies({50'000, 50'000, 50'000, 50'000}, 1, c), 4u);
}

TEST(EstimatedFinish, WriterWaitsForPartsInOrder) {
  CopyCosts c{1.0, 0.5, 0};
  // One part of 100 rows: written in 100, combined in 50 more, after the writer's own 10.
  EXPECT_DOUBLE_EQ(EstimatedFinish({10, 100}, 1, 1, c), 150);
  // Two workers write two parts at once; the writer combines them one after the other.
  EXPECT_DOUBLE_EQ(EstimatedFinish({100, 100}, 0, 2, c), 200);
  EXPECT_DOUBLE_EQ(EstimatedFinish({100, 100}, 0, 1, c), 250);
}

}  // namespace
}  // namespace merge
