// AlignKeys: exact matches for insertions, removals, replaced blocks, repeated keys and the cap;
// and, on random streams, a longest common subsequence (checked against dynamic programming).
#include "align/align.h"

#include <gtest/gtest.h>

#include <random>
#include <utility>

namespace upguard {
namespace {

using Pairs = std::vector<std::pair<uint32_t, uint32_t>>;

Pairs Matches(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
              uint32_t max_edit_distance = AlignOptions{}.max_edit_distance,
              std::vector<KeyRegion>* unaligned = nullptr) {
  AlignOptions options;
  options.max_edit_distance = max_edit_distance;
  if (max_edit_distance != AlignOptions{}.max_edit_distance) options.work_budget = 0;  // the cap
  const KeyAlignment alignment = AlignKeys(a, b, 100, options);
  if (unaligned != nullptr) *unaligned = alignment.unaligned;
  Pairs pairs;
  for (const KeyMatch& match : alignment.matches) pairs.emplace_back(match.a, match.b);
  return pairs;
}

size_t LcsLength(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<std::vector<size_t>> best(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t ia = 1; ia <= a.size(); ++ia) {
    for (size_t ib = 1; ib <= b.size(); ++ib) {
      best[ia][ib] = a[ia - 1] == b[ib - 1] ? best[ia - 1][ib - 1] + 1
                                            : std::max(best[ia - 1][ib], best[ia][ib - 1]);
    }
  }
  return best[a.size()][b.size()];
}

TEST(AlignKeysTest, IdenticalStreamsMatchEveryElement) {
  EXPECT_EQ(Matches({4, 5, 4}, {4, 5, 4}), (Pairs{{0, 0}, {1, 1}, {2, 2}}));
  EXPECT_EQ(Matches({}, {}), Pairs{});
}

TEST(AlignKeysTest, OneInsertedOrRemoved) {
  EXPECT_EQ(Matches({1, 2, 3}, {1, 2, 9, 3}), (Pairs{{0, 0}, {1, 1}, {2, 3}}));
  EXPECT_EQ(Matches({1, 2, 9, 3}, {1, 2, 3}), (Pairs{{0, 0}, {1, 1}, {3, 2}}));
  EXPECT_EQ(Matches({1, 2}, {7, 1, 2}), (Pairs{{0, 1}, {1, 2}}));  // at the start
  EXPECT_EQ(Matches({1, 2}, {1, 2, 7}), (Pairs{{0, 0}, {1, 1}}));  // at the end
}

TEST(AlignKeysTest, ThreeReplacedByOne) {
  EXPECT_EQ(Matches({1, 5, 6, 7, 2}, {1, 8, 2}), (Pairs{{0, 0}, {4, 2}}));
}

// The same key many times (copy_ inside every sum) with insertions scattered among them: no key
// is unique, so Myers pairs them.
TEST(AlignKeysTest, ScatteredInsertionsAmongRepeatedKeys) {
  const std::vector<uint32_t> a = {1, 2, 1, 2, 1, 2};
  const std::vector<uint32_t> b = {3, 1, 2, 1, 3, 2, 1, 3, 2};
  EXPECT_EQ(Matches(a, b), (Pairs{{0, 1}, {1, 2}, {2, 3}, {3, 5}, {4, 6}, {5, 8}}));
}

TEST(AlignKeysTest, UniqueKeysAnchorAroundAMovedOne) {
  // 7 moved from the front to the back: the longest chain of unique keys is 1 2 3.
  EXPECT_EQ(Matches({7, 1, 2, 3}, {1, 2, 3, 7}), (Pairs{{1, 0}, {2, 1}, {3, 2}}));
}

TEST(AlignKeysTest, NothingInCommon) {
  std::vector<KeyRegion> unaligned;
  EXPECT_EQ(Matches({1, 1, 2}, {3, 4, 3, 4}, 2048, &unaligned), Pairs{});
  EXPECT_TRUE(unaligned.empty());
}

// More differences than the cap in a region without anchors: left unaligned, while the common
// prefix and suffix around it stay matched.
TEST(AlignKeysTest, RegionBeyondTheCapIsLeftUnaligned) {
  std::vector<uint32_t> a = {9}, b = {9};
  for (int rep = 0; rep < 10; ++rep) {
    a.insert(a.end(), {1, 2});
    b.insert(b.end(), {3, 1});
  }
  a.push_back(8);
  b.push_back(8);
  std::vector<KeyRegion> unaligned;
  EXPECT_EQ(Matches(a, b, 4, &unaligned), (Pairs{{0, 0}, {21, 21}}));
  ASSERT_EQ(unaligned.size(), 1u);
  EXPECT_EQ(unaligned[0].begin_a, 1u);
  EXPECT_EQ(unaligned[0].end_a, 21u);
  EXPECT_EQ(unaligned[0].begin_b, 1u);
  EXPECT_EQ(unaligned[0].end_b, 21u);
  // Within the cap (20 differences) the ten 1s are paired.
  const Pairs within = Matches(a, b, 20, &unaligned);
  EXPECT_EQ(within.size(), 12u);
  EXPECT_TRUE(unaligned.empty());
}

// A region with more differences than max_edit_distance but few elements is aligned exactly
// within the work budget: an evaluation loop run with another batch size has two more model
// calls of a thousand ops each, and its first batch must still be paired with the other run's.
TEST(AlignKeysTest, SmallRegionBeyondTheCapIsAlignedWithinTheBudget) {
  std::vector<uint32_t> a, b;
  for (int rep = 0; rep < 1000; ++rep) {
    a.insert(a.end(), {1, 2});
    b.insert(b.end(), {1, 2, 3, 3, 3});  // 3,000 differences, 7,000 elements
  }
  AlignOptions options;
  KeyAlignment alignment = AlignKeys(a, b, 4, options);
  EXPECT_TRUE(alignment.unaligned.empty());
  ASSERT_EQ(alignment.matches.size(), a.size());
  for (uint32_t idx = 0; idx < a.size(); ++idx) {
    EXPECT_EQ(a[alignment.matches[idx].a], b[alignment.matches[idx].b]);
  }
  EXPECT_EQ(alignment.matches[2].b, 5u);  // the second 1 of a, with the second of b
  options.work_budget = 0;                // the cap alone: given up after the common prefix 1 2
  alignment = AlignKeys(a, b, 4, options);
  EXPECT_EQ(alignment.matches.size(), 2u);
  ASSERT_EQ(alignment.unaligned.size(), 1u);
  // A region too large for the budget keeps the cap: 2^28 / 300,000 elements is below 2,048.
  std::vector<uint32_t> big_a, big_b;
  for (int rep = 0; rep < 60000; ++rep) {
    big_a.insert(big_a.end(), {1, 2});
    big_b.insert(big_b.end(), {1, 2, 3});
  }
  alignment = AlignKeys(big_a, big_b, 4, AlignOptions{});
  EXPECT_EQ(alignment.matches.size(), 2u);
  EXPECT_EQ(alignment.unaligned.size(), 1u);
}

// Random streams over a few keys (no key unique on both sides, so no anchor: Myers alone): the
// matches pair equal keys, increase on both sides, and are as many as the longest common
// subsequence.
TEST(AlignKeysTest, RandomStreamsGiveALongestCommonSubsequence) {
  std::mt19937 rng(7);
  int checked = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<uint32_t> a(rng() % 60), b(rng() % 60);
    for (uint32_t& key : a) key = rng() % 4;
    for (uint32_t& key : b) key = rng() % 4;
    bool has_anchor = false;
    for (uint32_t key = 0; key < 4; ++key) {
      has_anchor |=
          std::count(a.begin(), a.end(), key) == 1 && std::count(b.begin(), b.end(), key) == 1;
    }
    if (has_anchor) continue;
    const Pairs pairs = Matches(a, b);
    for (size_t idx = 0; idx < pairs.size(); ++idx) {
      ASSERT_EQ(a[pairs[idx].first], b[pairs[idx].second]);
      if (idx > 0) {
        ASSERT_LT(pairs[idx - 1].first, pairs[idx].first);
        ASSERT_LT(pairs[idx - 1].second, pairs[idx].second);
      }
    }
    ASSERT_EQ(pairs.size(), LcsLength(a, b)) << "round " << round;
    ++checked;
  }
  EXPECT_GT(checked, 250);
}

}  // namespace
}  // namespace upguard
