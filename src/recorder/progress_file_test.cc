#include "recorder/progress_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "upguard/recorder.h"

namespace upguard {
namespace {

std::string FreshDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("upguard_progress_test_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(ProgressFileTest, RoundTripsEveryField) {
  RankProgress progress;
  progress.rank = 3;
  progress.step = -2;  // signed as the spec says
  progress.steps_recorded = 7;
  progress.steps_fingerprinted = 1ull << 40;
  progress.ops = 123456789012ull;
  progress.trace_bytes = 42;
  progress.closed = true;
  const std::string bytes = EncodeProgress(progress);
  ASSERT_EQ(bytes.size(), kProgressRecordSize);
  EXPECT_EQ(bytes.substr(0, 8), std::string("UGPROG\0\0", 8));
  EXPECT_EQ(bytes[12], 3);  // little-endian rank at offset 12
  auto back = DecodeProgress(bytes);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->rank, 3);
  EXPECT_EQ(back->step, -2);
  EXPECT_EQ(back->steps_recorded, 7u);
  EXPECT_EQ(back->steps_fingerprinted, 1ull << 40);
  EXPECT_EQ(back->ops, 123456789012ull);
  EXPECT_EQ(back->trace_bytes, 42u);
  EXPECT_TRUE(back->closed);
}

TEST(ProgressFileTest, RoundTripsAStopAndItsReason) {
  RankProgress progress;
  progress.step = 37;
  progress.stopped = true;
  progress.stop_reason = StopReason::kDiskFull;
  const std::string bytes = EncodeProgress(progress);
  EXPECT_EQ(bytes[56], 2);  // flags bit 1
  EXPECT_EQ(bytes[57], 1);  // bits 8..15: the reason
  auto back = DecodeProgress(bytes);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->stopped);
  EXPECT_FALSE(back->closed);
  EXPECT_EQ(back->stop_reason, StopReason::kDiskFull);
  EXPECT_EQ(back->step, 37);
  EXPECT_FALSE(DecodeProgress(EncodeProgress(RankProgress{}))->stopped);
}

TEST(ProgressFileTest, RefusesATornRecord) {
  RankProgress progress;
  progress.ops = 10;
  std::string bytes = EncodeProgress(progress);
  bytes[40] = 11;  // the ops of a newer record, the checksum of the older one
  EXPECT_EQ(DecodeProgress(bytes).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeProgress(bytes.substr(0, 63)).status().code(), StatusCode::kDataLoss);
}

TEST(ProgressFileTest, MissingFileIsNotFoundAndAnUncreatableOneWritesNothing) {
  const std::string dir = FreshDir("missing");
  EXPECT_EQ(ReadProgress(dir + "/rank0.progress").status().code(), StatusCode::kNotFound);
  ProgressWriter nowhere = ProgressWriter::Open(dir + "/no/such/dir/rank0.progress");
  nowhere.Write(RankProgress{});  // no file, no failure
  EXPECT_FALSE(std::filesystem::exists(dir + "/no"));
}

// The recorder rewrites the record as it starts, at each step's end, and as it closes.
TEST(ProgressFileTest, RecorderPublishesStepsOpsAndClose) {
  const std::string dir = FreshDir("recorder");
  const std::string path = dir + "/rank1.progress";
  RecorderOptions options;
  options.run_dir = dir + "/run";
  options.rank = 1;
  options.world_size = 2;
  options.steps = StepRange{1, 2};
  options.fingerprint = true;
  options.progress_path = path;
  auto recorder = Recorder::Open(options);
  ASSERT_TRUE(recorder.ok()) << recorder.status().message();
  auto at_start = ReadProgress(path);
  ASSERT_TRUE(at_start.ok()) << at_start.status().message();
  EXPECT_EQ(at_start->rank, 1);
  EXPECT_EQ(at_start->step, 0);
  EXPECT_EQ(at_start->ops, 0u);
  EXPECT_FALSE(at_start->closed);

  float x[2] = {1, 2};
  int64_t sizes[] = {2}, strides[] = {1};
  OpEvent op;
  op.op = "engine::neg";
  op.inputs = {Arg::Tensor("x", {DType::kFloat32, sizes, strides, 1, x})};
  (*recorder)->MarkStep();  // step 0: a fingerprint step with nothing in it
  for (int idx = 0; idx < 3; ++idx) (*recorder)->Record(op);
  auto mid_step = ReadProgress(path);
  ASSERT_TRUE(mid_step.ok());
  EXPECT_EQ(mid_step->step, 1);
  EXPECT_EQ(mid_step->ops, 0u);  // nothing per op
  (*recorder)->MarkStep();       // step 1: recorded
  auto after = ReadProgress(path);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->step, 2);
  EXPECT_EQ(after->ops, 3u);
  EXPECT_EQ(after->steps_recorded, 1u);
  EXPECT_EQ(after->steps_fingerprinted, 1u);
  EXPECT_GT(after->trace_bytes, 0u);
  ASSERT_TRUE((*recorder)->Close().ok());
  auto closed = ReadProgress(path);
  ASSERT_TRUE(closed.ok());
  EXPECT_TRUE(closed->closed);
  EXPECT_EQ(closed->ops, 3u);
}

}  // namespace
}  // namespace upguard
