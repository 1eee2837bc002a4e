#include "upguard/recorder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/file.h"
#include "base/identity.h"
#include "recorder/progress_file.h"
#include "trace/reader.h"

namespace upguard {
namespace {

std::string FreshDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("upguard_recorder_test_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

std::vector<TraceRecord> ReadAll(const std::string& path, std::unique_ptr<TraceReader>* keep) {
  auto reader = TraceReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  std::vector<TraceRecord> records;
  TraceRecord record;
  while (*(*reader)->Next(&record)) records.push_back(record);
  *keep = std::move(*reader);
  return records;
}

// A C++ engine records without torch: two steps of y = x * w, with an in-place update.
TEST(RecorderTest, RecordsOpsStepsAndMetadataWithoutTorch) {
  RecorderOptions options;
  options.run_dir = FreshDir("engine");
  options.engine_meta_json = R"({"engine":"test"})";
  auto recorder = Recorder::Open(options);
  ASSERT_TRUE(recorder.ok()) << recorder.status().message();

  float x[4] = {1, 2, 3, 4}, w[4] = {0.5f, 0.5f, 0.5f, 0.5f}, y[4];
  int64_t sizes[] = {4}, strides[] = {1};
  for (int step = 0; step < 2; ++step) {
    std::vector<Arg> inputs = {Arg::Tensor("x", {DType::kFloat32, sizes, strides, 1, x}),
                               Arg::Tensor("w", {DType::kFloat32, sizes, strides, 1, w}),
                               Arg::Scalar("alpha", "1")};
    std::vector<ArgRecord> digested = (*recorder)->DigestArgs(inputs);
    for (int idx = 0; idx < 4; ++idx) y[idx] = x[idx] * w[idx];
    OpEvent op;
    op.op = "engine::mul";
    op.phase = Phase::kForward;
    op.module = "layer0";
    op.call_site = "engine.cc:1";
    op.outputs = {Arg::Tensor("out", {DType::kFloat32, sizes, strides, 1, y})};
    EXPECT_EQ((*recorder)->ops_in_step(), 0u);
    const RecordedOp at = (*recorder)->Record(op, std::move(digested));
    EXPECT_TRUE(at.written);
    EXPECT_EQ(at.step, static_cast<uint32_t>(step));
    EXPECT_EQ(at.index, 0u);
    EXPECT_EQ((*recorder)->ops_in_step(), 1u);
    EXPECT_EQ((*recorder)->Record(op).index, 1u);  // the next op of the step
    w[0] += 1;                                     // the "optimizer"
    (*recorder)->MarkStep();
  }
  ASSERT_TRUE((*recorder)->Close().ok());
  EXPECT_EQ((*recorder)->ops_recorded(), 4u);
  EXPECT_FALSE((*recorder)->Record(OpEvent{}).written);  // closed

  std::unique_ptr<TraceReader> reader;
  std::vector<TraceRecord> records = ReadAll(options.run_dir + "/rank0.ugt", &reader);
  ASSERT_EQ(records.size(), 6u);  // op, op, stepend, op, op, stepend
  EXPECT_TRUE(reader->complete());
  const OpRecord& first = records[0].op;
  EXPECT_EQ(reader->strings().Get(first.op), "engine::mul");
  EXPECT_EQ(reader->strings().Get(first.module), "layer0");
  EXPECT_EQ(first.phase, Phase::kForward);
  ASSERT_EQ(first.inputs.size(), 3u);
  EXPECT_EQ(reader->strings().Get(first.inputs[1].name), "w");
  EXPECT_EQ(reader->strings().Get(first.inputs[2].text), "1");
  EXPECT_TRUE(first.outputs[0].has_stats);
  EXPECT_DOUBLE_EQ(first.outputs[0].stats.max, 2.0);
  const OpRecord& second = records[3].op;
  EXPECT_EQ(second.step, 1u);
  EXPECT_EQ(second.inputs[0].digest, first.inputs[0].digest);  // x unchanged
  EXPECT_NE(second.inputs[1].digest, first.inputs[1].digest);  // w updated
  EXPECT_NE(records[2].step_end.digest, records[5].step_end.digest);

  auto meta = nlohmann::json::parse(*ReadFileToString(options.run_dir + "/meta.json"));
  EXPECT_EQ(meta["engine"], "test");
  EXPECT_EQ(meta["world_size"], 1);
  EXPECT_EQ(meta["complete"], true);
  EXPECT_EQ(meta["stats_version"], 2);  // the statistics' lanes (digest.md §6.1)
  // Who and where, for the consent a re-run asks (cli/rerun_consent.h).
  EXPECT_EQ(meta["uid"], static_cast<int64_t>(getuid()));
  EXPECT_EQ(meta["hostname"], HostName());
  EXPECT_EQ(meta["user"], UserName(getuid()));
  auto rank_meta = nlohmann::json::parse(reader->meta_json());
  EXPECT_EQ(rank_meta["rank"], 0);
}

// An op's position counts the step's ops outside the input pipeline: a DataLoader's op gets an
// index but leaves the position to the next op (diff --explain captures by position).
TEST(RecorderTest, PositionsLeaveTheInputPipelineOut) {
  RecorderOptions options;
  options.run_dir = FreshDir("positions");
  auto recorder = Recorder::Open(options);
  ASSERT_TRUE(recorder.ok()) << recorder.status().message();
  OpEvent op;
  op.op = "engine::mul";
  op.phase = Phase::kForward;
  OpEvent load = op;
  load.op = "engine::stack";
  load.phase = Phase::kInput;
  for (int step = 0; step < 2; ++step) {
    std::vector<std::pair<uint64_t, uint64_t>> placed;  // index, position
    for (const OpEvent* event : {&load, &op, &load, &load, &op}) {
      const RecordedOp at = (*recorder)->Record(*event);
      ASSERT_TRUE(at.written);
      placed.emplace_back(at.index, at.position);
    }
    EXPECT_EQ(placed,
              (std::vector<std::pair<uint64_t, uint64_t>>{{0, 0}, {1, 0}, {2, 1}, {3, 1}, {4, 1}}));
    EXPECT_EQ((*recorder)->compared_in_step(), 2u);
    (*recorder)->MarkStep();
    EXPECT_EQ((*recorder)->compared_in_step(), 0u);
  }
  ASSERT_TRUE((*recorder)->Close().ok());
}

// The adapter names parameters, gradients and optimizer state (Arg::label): written with the
// op, whether its inputs were digested at entry or with the outputs, and outside the digests.
TEST(RecorderTest, LabelsReachTheTraceAndNoDigest) {
  float v[4] = {1, 2, 3, 4};
  int64_t sizes[] = {4}, strides[] = {1};
  const TensorView view{DType::kFloat32, sizes, strides, 1, v};
  std::vector<Digest128> step_digests;
  for (bool labelled : {true, false}) {
    RecorderOptions options;
    options.run_dir = FreshDir(labelled ? "labels" : "no_labels");
    auto recorder = std::move(*Recorder::Open(options));
    OpEvent op;
    op.op = "aten::mul_";
    op.phase = Phase::kOptimizer;
    op.inputs = {Arg::Tensor("self", view), Arg::Scalar("other", "0.999")};
    op.outputs = {Arg::Tensor("", view)};
    std::vector<ArgRecord> inputs;
    {
      const std::string state = "exp_avg_sq of fc.weight";  // gone before Record: copied
      if (labelled) op.inputs[0].label = state;
      inputs = recorder->DigestArgs(op.inputs);
      op.inputs[0].label = {};
    }
    if (labelled) op.outputs[0].label = "exp_avg_sq of fc.weight";
    recorder->Record(op, std::move(inputs));
    if (labelled) op.inputs[0].label = "exp_avg_sq of fc.weight";
    if (labelled) op.outputs[0].label = "fc.weight";
    recorder->Record(op);
    ASSERT_TRUE(recorder->Close().ok());

    std::unique_ptr<TraceReader> reader;
    std::vector<TraceRecord> records = ReadAll(options.run_dir + "/rank0.ugt", &reader);
    ASSERT_EQ(records.size(), 3u);
    const StringTable& strings = reader->strings();
    const OpRecord& first = records[0].op;
    const OpRecord& second = records[1].op;
    EXPECT_EQ(strings.Get(first.inputs[0].label), labelled ? "exp_avg_sq of fc.weight" : "");
    EXPECT_EQ(first.inputs[1].label, kEmptyString);
    EXPECT_EQ(strings.Get(first.outputs[0].label), labelled ? "exp_avg_sq of fc.weight" : "");
    EXPECT_EQ(strings.Get(second.inputs[0].label), labelled ? "exp_avg_sq of fc.weight" : "");
    EXPECT_EQ(strings.Get(second.outputs[0].label), labelled ? "fc.weight" : "");
    step_digests.push_back(records[2].step_end.digest);
  }
  EXPECT_EQ(step_digests[0], step_digests[1]);
}

TEST(RecorderTest, FiltersByStepDepthAndOpName) {
  RecorderOptions options;
  options.run_dir = FreshDir("filters");
  options.steps = *ParseStepRange("1:2");
  options.max_depth = 0;
  options.ops = {"aten::*mm"};
  auto recorder = std::move(*Recorder::Open(options));
  EXPECT_FALSE(recorder->Wants("aten::mm", 0));  // step 0 is outside 1:2
  recorder->MarkStep();
  EXPECT_TRUE(recorder->Wants("aten::mm", 0));
  EXPECT_TRUE(recorder->Wants("aten::addmm", 0));
  EXPECT_FALSE(recorder->Wants("aten::mm", 1));   // too deep
  EXPECT_FALSE(recorder->Wants("aten::add", 0));  // no pattern matches
  recorder->MarkStep();
  EXPECT_FALSE(recorder->Wants("aten::mm", 0));
  EXPECT_TRUE(recorder->Close().ok());
}

// --fingerprint with --steps 1:2: steps 0 and 2 record only the fingerprint pseudo-ops, and
// their StepEnd records say they are fingerprint steps; step 1 records every op.
TEST(RecorderTest, FingerprintStepsRecordOnlyTheFingerprintOps) {
  RecorderOptions options;
  options.run_dir = FreshDir("fingerprint");
  options.steps = *ParseStepRange("1:2");
  options.fingerprint = true;
  auto recorder = std::move(*Recorder::Open(options));
  float loss[1] = {2.5f};
  int64_t sizes[] = {1}, strides[] = {1};
  for (int step = 0; step < 3; ++step) {
    EXPECT_EQ(recorder->FingerprintStep(), step != 1);
    EXPECT_EQ(recorder->StepWanted(), step == 1);
    EXPECT_EQ(recorder->Wants("aten::mm", 0), step == 1);
    for (std::string_view op : {"upguard::rng_state", "upguard::batch", "upguard::loss",
                                "upguard::grads", "upguard::state"}) {
      EXPECT_TRUE(recorder->Wants(op, 0)) << op;
    }
    EXPECT_EQ(recorder->Wants("upguard::other", 0), step == 1);
    OpEvent op;
    op.op = "upguard::loss";
    op.inputs = {Arg::Tensor("loss", {DType::kFloat32, sizes, strides, 1, loss})};
    EXPECT_TRUE(recorder->Record(op).written);
    recorder->MarkStep();
  }
  ASSERT_TRUE(recorder->Close().ok());
  std::unique_ptr<TraceReader> reader;
  std::vector<uint64_t> flags;
  for (const TraceRecord& record : ReadAll(recorder->trace_path(), &reader)) {
    if (record.type == RecordType::kStepEnd) flags.push_back(record.step_end.flags);
  }
  EXPECT_EQ(flags, (std::vector<uint64_t>{kStepFingerprint, 0, kStepFingerprint}));
  const auto meta = nlohmann::json::parse(*ReadFileToString(options.run_dir + "/meta.json"));
  EXPECT_EQ(meta["record_options"]["fingerprint"], true);
}

// A program resumed from its checkpoint of step 5 (upguard.resume_point) skips to it: the
// window 5:7 is recorded under the program's step numbers, and no step before it is written.
TEST(RecorderTest, SkipToStartsTheStepAResumedProgramRuns) {
  RecorderOptions options;
  options.run_dir = FreshDir("skip_to");
  options.steps = *ParseStepRange("5:7");
  auto recorder = std::move(*Recorder::Open(options));
  recorder->SkipTo(5);
  EXPECT_EQ(recorder->step(), 5);
  recorder->SkipTo(3);  // not after the current step: nothing changes
  EXPECT_EQ(recorder->step(), 5);
  float value[1] = {1.0f};
  int64_t sizes[] = {1}, strides[] = {1};
  for (int step = 5; step < 7; ++step) {
    EXPECT_TRUE(recorder->StepWanted());
    OpEvent op;
    op.op = "aten::add";
    op.inputs = {Arg::Tensor("self", {DType::kFloat32, sizes, strides, 1, value})};
    EXPECT_EQ(recorder->Record(op).step, static_cast<uint32_t>(step));
    recorder->MarkStep();
  }
  ASSERT_TRUE(recorder->Close().ok());
  std::unique_ptr<TraceReader> reader;
  std::vector<uint32_t> ended;
  for (const TraceRecord& record : ReadAll(recorder->trace_path(), &reader)) {
    if (record.type == RecordType::kStepEnd) ended.push_back(record.step_end.step);
  }
  EXPECT_EQ(ended, (std::vector<uint32_t>{5, 6}));
}

// A collective as the PyTorch adapter records one: its op at call return (outputs as aliases),
// the completion later from a worker thread, with the outputs digested then.
TEST(RecorderTest, RecordsCollectivesFromAnotherThreadAndDropsLateOnes) {
  RecorderOptions options;
  options.run_dir = FreshDir("collectives");
  options.rank = 1;
  options.world_size = 2;
  auto recorder = std::move(*Recorder::Open(options));
  float grad[4] = {1, 2, 3, 4};
  int64_t sizes[] = {4}, strides[] = {1};
  const TensorView view{DType::kFloat32, sizes, strides, 1, grad};
  OpEvent allreduce;
  allreduce.op = "c10d::allreduce_";
  allreduce.phase = Phase::kBackward;
  allreduce.inputs = {Arg::Tensor("tensors", view)};
  allreduce.outputs = {Arg::Shaped(ArgKind::kAlias, "", view)};
  OpEvent other;
  other.op = "aten::mul";
  other.inputs = {Arg::Tensor("self", view)};
  const RecordedOp first = recorder->Record(other);
  const RecordedOp at = recorder->Record(allreduce);
  EXPECT_EQ(first.seq, 0u);
  EXPECT_EQ(at.seq, 1u);
  EXPECT_EQ(recorder->Record(other).seq, 2u);
  for (float& value : grad) value *= 2;  // the reduction, done
  CollectiveEvent done{at, "0", {0, 1}, 1, 2, 7, true, 1};
  std::thread worker([&] {
    recorder->RecordCollective(done, recorder->DigestArgs({Arg::Tensor("tensors", view)}));
  });
  worker.join();
  const RecordedOp pending_op = recorder->Record(allreduce);
  EXPECT_EQ(pending_op.seq, 3u);
  recorder->RecordCollective(CollectiveEvent{pending_op, "0", {}, 1, 2, 8, false, 0}, {});
  recorder->MarkStep();
  const RecordedOp next = recorder->Record(other);
  EXPECT_EQ(next.seq, 4u);
  EXPECT_EQ(next.index, 0u);
  recorder->RecordCollective(done, {});  // its step ended: dropped, not an error
  EXPECT_EQ(recorder->collectives_dropped(), 1u);
  ASSERT_TRUE(recorder->Close().ok());

  std::unique_ptr<TraceReader> reader;
  // Rank 1 alone of a world of 2: the run stays staged, waiting for rank 0 (run_place.h).
  std::vector<TraceRecord> records = ReadAll(recorder->trace_path(), &reader);
  ASSERT_FALSE(reader->damage().has_value()) << reader->damage()->message;
  std::vector<CollectiveRecord> collectives;
  for (const TraceRecord& record : records) {
    if (record.type == RecordType::kCollective) collectives.push_back(record.collective);
  }
  ASSERT_EQ(collectives.size(), 2u);
  EXPECT_EQ(collectives[0].op_seq, 1u);
  const CollectiveInfo& info = *collectives[0].info;
  EXPECT_EQ(reader->strings().Get(info.group), "0");
  EXPECT_EQ(info.ranks, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(info.group_rank, 1u);
  EXPECT_EQ(info.group_size, 2u);
  EXPECT_EQ(info.seq, 7u);
  EXPECT_TRUE(info.completed);
  EXPECT_EQ(info.ops_before_completion, 1u);
  ASSERT_EQ(info.outputs.size(), 1u);
  EXPECT_EQ(reader->strings().Get(info.outputs[0].name), "tensors");
  EXPECT_NE(info.outputs[0].digest, records[1].op.inputs[0].digest);  // the doubled values
  EXPECT_DOUBLE_EQ(info.outputs[0].stats.max, 8.0);
  EXPECT_EQ(collectives[1].op_seq, 3u);
  EXPECT_FALSE(collectives[1].info->completed);
  EXPECT_TRUE(collectives[1].info->outputs.empty());
}

// Past its share of max_bytes a rank stops recording (the engine goes on): its trace ends with
// a Stopped record within the share, Close says why, and so do meta.json and the progress record.
TEST(RecorderTest, StopsAtItsShareOfTheByteBudget) {
  RecorderOptions options;
  options.run_dir = FreshDir("budget");
  // One rank, so that Close moves the run into place (a direct-API run of several ranks waits
  // for all of them, run_place.h); the share of several is max_bytes / world_size.
  options.max_bytes = 8192;
  options.progress_path = options.run_dir + ".progress";
  auto recorder = Recorder::Open(options);
  ASSERT_TRUE(recorder.ok()) << recorder.status().message();
  float x[16] = {};
  int64_t sizes[] = {16}, strides[] = {1};
  int64_t stopped_at = -1;
  for (int step = 0; step < 200 && stopped_at < 0; ++step) {
    for (int op_idx = 0; op_idx < 10; ++op_idx) {
      x[0] = static_cast<float>(step * 10 + op_idx);
      OpEvent op;
      op.op = "engine::fill";
      op.outputs = {Arg::Tensor("out", {DType::kFloat32, sizes, strides, 1, x})};
      (*recorder)->Record(op);
    }
    if (!(*recorder)->enabled()) stopped_at = (*recorder)->step();
    (*recorder)->MarkStep();  // the engine goes on
  }
  ASSERT_GT(stopped_at, 0);
  const Status closed = (*recorder)->Close();
  EXPECT_EQ(closed.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(closed.message().find("reached its byte budget of 8.0 KiB"), std::string::npos)
      << closed.message();
  const std::string trace = options.run_dir + "/rank0.ugt";
  EXPECT_LE(std::filesystem::file_size(trace), 8192u);

  std::unique_ptr<TraceReader> reader;
  ReadAll(trace, &reader);
  EXPECT_FALSE(reader->damage());
  ASSERT_TRUE(reader->stopped());
  EXPECT_EQ(reader->stopped()->step, static_cast<uint32_t>(stopped_at));
  EXPECT_EQ(reader->stopped()->reason, StopReason::kMaxBytes);
  auto meta = ReadFileToString(options.run_dir + "/meta.json");
  ASSERT_TRUE(meta.ok());
  EXPECT_FALSE(nlohmann::json::parse(*meta)["complete"].get<bool>());
  auto progress = ReadProgress(options.progress_path);
  ASSERT_TRUE(progress.ok()) << progress.status().message();
  EXPECT_TRUE(progress->closed);
  EXPECT_TRUE(progress->stopped);
  EXPECT_EQ(progress->stop_reason, StopReason::kMaxBytes);
  EXPECT_EQ(progress->step, stopped_at);  // not the step the engine went on to
}

TEST(RecorderTest, BadOptionsAreClearErrors) {
  RecorderOptions options;
  EXPECT_EQ(Recorder::Open(options).status().code(), StatusCode::kInvalidArgument);
  options.run_dir = FreshDir("bad");
  options.rank = 2;
  options.world_size = 2;
  StatusOr<std::unique_ptr<Recorder>> recorder = Recorder::Open(options);
  EXPECT_NE(recorder.status().message().find("rank 2"), std::string::npos);
  options.rank = 0;
  options.engine_meta_json = "[1]";
  EXPECT_EQ(Recorder::Open(options).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace upguard
