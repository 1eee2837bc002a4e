// The recorder's hash pool (RecorderOptions::hash_threads): a trace recorded with it is the
// trace recorded without it, record for record (order, seq, digests, statistics, step digests),
// when every write to memory handed over with an owner waits for it first (WaitBeforeWrite).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "trace/reader.h"
#include "upguard/recorder.h"

namespace upguard {
namespace {

constexpr int64_t kCount = 1 << 16;  // 256 KiB of floats

struct Buffer {
  std::vector<float> values = std::vector<float>(kCount);
  int64_t sizes[1] = {kCount};
  int64_t strides[1] = {1};
  TensorView View() const { return {DType::kFloat32, sizes, strides, 1, values.data()}; }
  // Handed over for the pool: the test keeps the memory alive itself (a null-deleter owner).
  Arg Owned(std::string_view name) const {
    Arg arg = Arg::Tensor(name, View());
    arg.owner = std::shared_ptr<const void>(values.data(), [](const void*) {});
    arg.memory = values.data();
    return arg;
  }
};

// Three steps of: a = a * 1.5 + step (in place), b = a + 1 (a new result), then the "optimizer"
// writes a again. Returns the rank's records; `offloaded` counts the digests the pool took.
std::vector<TraceRecord> RunEngine(const std::string& dir, int hash_threads, int* offloaded,
                                   std::unique_ptr<TraceReader>* reader) {
  std::filesystem::remove_all(dir);
  RecorderOptions options;
  options.run_dir = dir;
  options.hash_threads = hash_threads;
  options.hash_async_bytes = 64 << 10;
  auto opened = Recorder::Open(options);
  EXPECT_TRUE(opened.ok()) << opened.status().message();
  Recorder& recorder = **opened;
  Buffer a, b;
  for (int64_t idx = 0; idx < kCount; ++idx) a.values[idx] = static_cast<float>(idx % 101);
  for (int step = 0; step < 3; ++step) {
    // In place: its input is digested before the write, on this thread (no owner).
    recorder.WaitBeforeWrite(a.values.data());
    std::vector<ArgRecord> in = recorder.DigestArgs({Arg::Tensor("self", a.View())});
    for (float& v : a.values) v = v * 1.5f + static_cast<float>(step);
    OpEvent scale{"engine::scale_", Phase::kForward};
    scale.outputs = {a.Owned("self")};
    std::vector<ArgRecord> out = recorder.DigestArgs(scale.outputs);
    *offloaded += out[0].pending != nullptr;
    recorder.Record(scale, std::move(in), std::move(out));
    // A new result read from a: a's digest may still be in the making.
    recorder.WaitBeforeWrite(b.values.data());
    for (int64_t idx = 0; idx < kCount; ++idx) b.values[idx] = a.values[idx] + 1;
    OpEvent add{"engine::add", Phase::kForward};
    add.inputs = {a.Owned("self"), Arg::Scalar("other", "1")};
    add.outputs = {b.Owned("out")};
    std::vector<ArgRecord> add_in = recorder.DigestArgs(add.inputs);
    *offloaded += add_in[0].pending != nullptr;
    recorder.Record(add, std::move(add_in));
    recorder.WaitBeforeWrite(a.values.data());  // the optimizer's write
    for (float& v : a.values) v -= 0.25f;
    recorder.MarkStep();
  }
  EXPECT_EQ(recorder.ops_recorded(), 6u);
  EXPECT_TRUE(recorder.Close().ok());
  auto opened_reader = TraceReader::Open(dir + "/rank0.ugt");
  EXPECT_TRUE(opened_reader.ok());
  std::vector<TraceRecord> records;
  TraceRecord record;
  while (*(*opened_reader)->Next(&record)) records.push_back(record);
  *reader = std::move(*opened_reader);
  return records;
}

void ExpectSameArgs(const std::vector<ArgRecord>& got, const std::vector<ArgRecord>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t idx = 0; idx < got.size(); ++idx) {
    EXPECT_EQ(got[idx].kind, want[idx].kind);
    EXPECT_EQ(got[idx].digest, want[idx].digest) << "arg " << idx;
    EXPECT_EQ(got[idx].has_stats, want[idx].has_stats);
    EXPECT_EQ(got[idx].stats.mean, want[idx].stats.mean);
    EXPECT_EQ(got[idx].stats.l2, want[idx].stats.l2);
    EXPECT_EQ(got[idx].stats.max, want[idx].stats.max);
  }
}

TEST(RecorderPoolTest, ATraceRecordedWithThePoolIsTheTraceWithout) {
  const auto base = std::filesystem::temp_directory_path() / "upguard_recorder_pool_test";
  int none = 0, offloaded = 0;
  std::unique_ptr<TraceReader> plain_reader, pool_reader;
  const std::vector<TraceRecord> plain =
      RunEngine((base / "plain").string(), 0, &none, &plain_reader);
  const std::vector<TraceRecord> pooled =
      RunEngine((base / "pool").string(), 2, &offloaded, &pool_reader);
  EXPECT_EQ(none, 0);
  EXPECT_EQ(offloaded, 6);  // every large owned tensor went to the pool
  ASSERT_EQ(pooled.size(), plain.size());
  ASSERT_EQ(plain.size(), 9u);  // 2 ops and a StepEnd, three times
  for (size_t idx = 0; idx < plain.size(); ++idx) {
    ASSERT_EQ(pooled[idx].type, plain[idx].type) << "record " << idx;
    if (plain[idx].type == RecordType::kStepEnd) {
      EXPECT_EQ(pooled[idx].step_end.digest, plain[idx].step_end.digest) << "step end " << idx;
      EXPECT_EQ(pooled[idx].step_end.op_count, 2u);
      continue;
    }
    EXPECT_EQ(pooled[idx].op.seq, plain[idx].op.seq);
    EXPECT_EQ(pool_reader->strings().Get(pooled[idx].op.op),
              plain_reader->strings().Get(plain[idx].op.op));
    ExpectSameArgs(pooled[idx].op.inputs, plain[idx].op.inputs);
    ExpectSameArgs(pooled[idx].op.outputs, plain[idx].op.outputs);
  }
  // The steps differ from each other (a test whose values never change could not fail).
  EXPECT_NE(plain[2].step_end.digest, plain[5].step_end.digest);
  std::filesystem::remove_all(base);
}

}  // namespace
}  // namespace upguard
