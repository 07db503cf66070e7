#include "parallel_layout.h"

#include <gtest/gtest.h>

#include <set>

namespace trainer {
namespace {

using Groups = std::vector<std::vector<int>>;

TEST(ParallelLayout, ParsesShapes) {
  auto s = ParseParallel("tp=2,pp=2,dp=2");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(*s, (ParallelSpec{2, 2, 2, 1}));
  s = ParseParallel("ep=2,dp=4,tp=1,pp=2");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(*s, (ParallelSpec{1, 2, 4, 2}));
  EXPECT_EQ(ToString(*s), "tp=1,pp=2,dp=4,ep=2");
  for (const char* bad : {"tp=2,pp", "tp=0", "tp=65", "xp=2", "tp=2,tp=2", "tp=two"}) {
    auto r = ParseParallel(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.error().message().find("parallel"), std::string::npos) << bad;
    }
  }
}

// Megatron's own example (parallel_state.py, initialize_model_parallel's docstring): 16 GPUs,
// tensor-parallel 2, pipeline-parallel 4.
TEST(ParallelLayout, MegatronDocstringExample) {
  auto l = ParallelLayout::Create({2, 4, 2, 1}, 16, 8);
  ASSERT_TRUE(l.ok()) << l.error().message();
  EXPECT_EQ(l->Groups(Role::kTp),
            (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}));
  EXPECT_EQ(l->Groups(Role::kDp),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
  EXPECT_EQ(l->Groups(Role::kPp),
            (Groups{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}}));
  Coords c = l->CoordsOf(13);
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(c.dp, 0);
  EXPECT_EQ(c.pp, 3);
}

// The algorithm's docstring: sizes [tp=2, dp=3, pp=4], the dp mask.
TEST(ParallelLayout, MaskedOrthogonalDocstring) {
  Groups g = MaskedOrthogonalGroups({2, 3, 4}, {false, true, false});
  ASSERT_EQ(g.size(), 8u);
  EXPECT_EQ(g[0], (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(g[1], (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(g[7], (std::vector<int>{19, 21, 23}));
}

TEST(ParallelLayout, ExpertGroupsComeFromOneDataParallelGroup) {
  auto l = ParallelLayout::Create({2, 2, 4, 2}, 16, 4);
  ASSERT_TRUE(l.ok()) << l.error().message();
  Groups ep = l->Groups(Role::kEp);
  ASSERT_EQ(ep.size(), 8u);
  EXPECT_EQ(ep[0], (std::vector<int>{0, 2}));
  EXPECT_EQ(ep[1], (std::vector<int>{1, 3}));
  EXPECT_EQ(ep[2], (std::vector<int>{4, 6}));
  std::set<int> seen;
  for (const auto& g : ep) {
    ASSERT_EQ(g.size(), 2u);
    std::vector<int> dp = l->GroupOf(Role::kDp, g[0]);
    for (int r : g) {
      EXPECT_TRUE(seen.insert(r).second) << r;  // a partition of the ranks
      EXPECT_NE(std::find(dp.begin(), dp.end(), r), dp.end()) << r << " outside the dp group";
      EXPECT_EQ(l->CoordsOf(r).tp, l->CoordsOf(g[0]).tp);
      EXPECT_EQ(l->CoordsOf(r).pp, l->CoordsOf(g[0]).pp);
    }
  }
  EXPECT_EQ(seen.size(), 16u);
  EXPECT_EQ(l->CoordsOf(6).ep, 1);
  EXPECT_EQ(l->CoordsOf(6).edp, 1);
}

TEST(ParallelLayout, TensorParallelGroupsSitInsideNodes) {
  // 4 nodes x 2 ranks: every tp group is one node's two ranks.
  auto l = ParallelLayout::Create({2, 2, 2, 1}, 8, 2);
  ASSERT_TRUE(l.ok()) << l.error().message();
  for (const auto& g : l->Groups(Role::kTp)) EXPECT_EQ(g[0] / 2, g[1] / 2);
  EXPECT_EQ(l->GroupOf(Role::kPp, 3), (std::vector<int>{3, 7}));
  EXPECT_EQ(l->GroupOf(Role::kDp, 5), (std::vector<int>{5, 7}));
}

TEST(ParallelLayout, RefusesShapesThatDoNotFit) {
  auto a = ParallelLayout::Create({2, 2, 2, 1}, 6, 2);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("WORLD_SIZE=6"), std::string::npos) << a.error().message();
  auto b = ParallelLayout::Create({1, 2, 3, 2}, 6, 2);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("ep=2 does not divide dp=3"), std::string::npos);
  auto c = ParallelLayout::Create({4, 1, 2, 1}, 8, 2);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("inside one node"), std::string::npos);
}

}  // namespace
}  // namespace trainer
