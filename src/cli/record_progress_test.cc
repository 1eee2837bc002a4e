#include "cli/record_progress.h"

#include <gtest/gtest.h>

#include "cli/bottom_row.h"

namespace upguard {
namespace {

RankProgress Rank(int32_t rank, int64_t step, uint64_t ops) {
  RankProgress progress;
  progress.rank = rank;
  progress.step = step;
  progress.steps_recorded = static_cast<uint64_t>(step);
  progress.ops = ops;
  progress.trace_bytes = 3u << 20;
  return progress;
}

TEST(RecordProgressTest, LineNamesRanksStepsOpsAndRate) {
  EXPECT_EQ(RecordProgress::Line({}, -1, 4.7),
            "upguard record: waiting for the command to start recording (4 s)");
  EXPECT_EQ(RecordProgress::Line({Rank(0, 1, 5194)}, -1, 9),
            "upguard record: 1 rank, step 1, 1 step recorded, 5,194 ops, 3.0 MiB");
  std::vector<RankProgress> ranks = {Rank(0, 37, 1200000), Rank(1, 35, 34567)};
  ranks[1].steps_fingerprinted = 2;
  ranks[1].closed = true;
  EXPECT_EQ(RecordProgress::Line(ranks, 52310.4, 60),
            "upguard record: 2 ranks (1 done), steps 35..37, 72 steps recorded, 2 "
            "fingerprinted, 1,234,567 ops (52,310 ops/s), 6.0 MiB");
}

TEST(RecordProgressTest, SaysWhichRanksStoppedRecordingWhereAndWhy) {
  std::vector<RankProgress> ranks = {Rank(0, 40, 100), Rank(1, 40, 100)};
  EXPECT_EQ(StoppedRanksNote(ranks), "");
  ranks[1].stopped = true;
  ranks[1].step = 37;
  ranks[1].stop_reason = StopReason::kDiskFull;
  EXPECT_EQ(StoppedRanksNote(ranks),
            "incomplete: rank 1 stopped recording at step 37 (disk full): its trace ends there");
  EXPECT_NE(RecordProgress::Line(ranks, -1, 1).find("recorded (recording stopped on 1)"),
            std::string::npos);
  ranks[0].stopped = true;
  ranks[0].stop_reason = StopReason::kMaxBytes;
  EXPECT_EQ(StoppedRanksNote(ranks),
            "incomplete: rank 0 stopped recording at step 40 (--max-bytes reached), rank 1 "
            "stopped recording at step 37 (disk full): each trace ends there");
}

TEST(RecordProgressTest, BottomRowKeepsTheLastRowAndGivesItBack) {
  // A new line, the region above the last row (cursor saved around it), back up one line.
  EXPECT_EQ(BottomRow::ReserveBytes(24), "\n\0337\033[1;23r\0338\033[1A");
  // Drawn on row 24 without moving the command's cursor, cut to the width less one column.
  EXPECT_EQ(BottomRow::DrawBytes(24, 8, "abcdefghij", false), "\0337\033[24;1H\033[2Kabcdefg\0338");
  EXPECT_EQ(BottomRow::DrawBytes(24, 80, "x", true), "\0337\033[24;1H\033[2K\033[7mx\033[0m\0338");
  EXPECT_EQ(BottomRow::ReleaseBytes(24), "\0337\033[r\033[24;1H\033[2K\0338");
}

}  // namespace
}  // namespace upguard
