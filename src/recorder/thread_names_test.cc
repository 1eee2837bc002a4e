// ThreadNames: an op's argument names come from the thread's memo without the lock, and a memo
// never gives one recorder's ids to another (each has its own string table).
#include "recorder/thread_names.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "trace/reader.h"

namespace upguard {
namespace {

// Calls `check` with every Op record of the trace in `dir` and the trace's strings.
template <typename Check>
void ForEachOp(const std::string& dir, Check check) {
  auto reader = TraceReader::Open(dir + "/rank0.ugt");
  ASSERT_TRUE(reader.ok());
  TraceRecord record;
  while (*(*reader)->Next(&record)) {
    if (record.type == RecordType::kOp) check(record.op, (*reader)->strings());
  }
}

// Records `ops` ops of "engine::mul" (x, w, alpha=<scalar>) into `dir`, after an op whose
// names come first in the table when `shift` (so the ids differ from a recorder without it),
// then checks every op's argument names and texts read back.
void RecordAndCheck(const std::string& dir, bool shift, int ops) {
  std::filesystem::remove_all(dir);
  RecorderOptions options;
  options.run_dir = dir;
  auto recorder = Recorder::Open(options);
  ASSERT_TRUE(recorder.ok()) << recorder.status().message();
  float x[2] = {1, 2};
  int64_t sizes[] = {2}, strides[] = {1};
  if (shift) {
    OpEvent first{"engine::first", Phase::kOther};
    first.inputs = {Arg::Scalar("aaa", "zzz"), Arg::Scalar("bbb", "yyy")};
    (*recorder)->Record(first);
  }
  for (int op_idx = 0; op_idx < ops; ++op_idx) {
    OpEvent op{"engine::mul", Phase::kForward};
    op.inputs = {Arg::Tensor("x", {DType::kFloat32, sizes, strides, 1, x}),
                 Arg::Tensor("w", {DType::kFloat32, sizes, strides, 1, x}),
                 Arg::Scalar("alpha", "1.5")};
    (*recorder)->Record(op);
  }
  ASSERT_TRUE((*recorder)->Close().ok());
  int seen = 0;
  ForEachOp(dir, [&](const OpRecord& op, const StringTable& strings) {
    if (strings.Get(op.op) != "engine::mul") return;
    ASSERT_EQ(op.inputs.size(), 3u);
    EXPECT_EQ(strings.Get(op.inputs[0].name), "x");
    EXPECT_EQ(strings.Get(op.inputs[1].name), "w");
    EXPECT_EQ(strings.Get(op.inputs[2].name), "alpha");
    EXPECT_EQ(strings.Get(op.inputs[2].text), "1.5");
    ++seen;
  });
  EXPECT_EQ(seen, ops);
  std::filesystem::remove_all(dir);
}

TEST(ThreadNamesTest, ANewRecorderOnTheSameThreadGetsItsOwnIds) {
  const auto base = std::filesystem::temp_directory_path() / "upguard_thread_names_test";
  RecordAndCheck((base / "a").string(), /*shift=*/false, 3);  // the memo learns a's ids
  RecordAndCheck((base / "b").string(), /*shift=*/true, 3);   // b's ids differ: not a's
}

TEST(ThreadNamesTest, ThreadsOfOneRecorderEachLearnItsIds) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / "upguard_thread_names_threads").string();
  std::filesystem::remove_all(dir);
  RecorderOptions options;
  options.run_dir = dir;
  auto recorder = Recorder::Open(options);
  ASSERT_TRUE(recorder.ok());
  std::vector<std::thread> threads;
  for (int thread_idx = 0; thread_idx < 3; ++thread_idx) {
    threads.emplace_back([&recorder, thread_idx] {
      const std::string text = std::to_string(thread_idx);  // each thread's own scalar text
      const std::string name = "thread_" + text;            // and argument name
      for (int op_idx = 0; op_idx < 50; ++op_idx) {
        OpEvent op{"engine::fill", Phase::kOther};
        op.inputs = {Arg::Scalar("value", text), Arg::Scalar(name, "x")};
        (*recorder)->Record(op);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE((*recorder)->Close().ok());
  int seen = 0;
  ForEachOp(dir, [&](const OpRecord& op, const StringTable& strings) {
    const std::string text(strings.Get(op.inputs[0].text));
    EXPECT_EQ(strings.Get(op.inputs[0].name), "value");
    EXPECT_EQ(strings.Get(op.inputs[1].name), "thread_" + text);
    ++seen;
  });
  EXPECT_EQ(seen, 150);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace upguard
