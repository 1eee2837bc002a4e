#include "machines/peer_score.h"

#include <gtest/gtest.h>

namespace upguard::machines {
namespace {

PeerScore Score(std::vector<float> rows) {
  return ScorePeers(rows.data(), rows.size(), 1, Distance::kEuclidean, PeerRule{});
}

// A rate-limited machine of four (measured: its packet rate far above, its ring neighbours'
// pulled apart below): the candidate's own distance no longer counts in its peers' spread.
// Counted, the peers' scores were 1.87 against its 3.47 (under the ratio of 2) and it went
// unnamed; among themselves they are 0.8.
TEST(PeerScoreTest, AMachineFarFromPeersThatDifferAmongThemselvesIsNamed) {
  const PeerScore score = Score({0.0f, 0.0f, 1.6f, 4.0f});
  EXPECT_EQ(score.machine, 3);
  EXPECT_NEAR(score.score, (4.0 + 4.0 + 2.4) / 3, 1e-6);
  EXPECT_NEAR(score.spread, 0.8, 1e-6);
}

TEST(PeerScoreTest, EvenlySpreadOrTwoGroupsNameNoOne) {
  EXPECT_EQ(Score({0.0f, 0.1f, 0.2f, 0.35f}).machine, -1);
  EXPECT_EQ(Score({0.0f, 0.0f, 3.0f, 3.2f}).machine, -1);
  EXPECT_EQ(Score({0.5f, 0.5f, 0.5f}).machine, -1);
}

TEST(PeerScoreTest, OneFarMachineAmongManyIsNamed) {
  std::vector<float> rows(32, 1.0f);
  for (size_t idx = 0; idx < rows.size(); ++idx) rows[idx] += 0.01f * static_cast<float>(idx % 3);
  rows[17] = 2.0f;
  EXPECT_EQ(Score(rows).machine, 17);
}

}  // namespace
}  // namespace upguard::machines
