// The C++ API stages like `upguard record -o`: Recorder::Open on a directory that holds a run
// refuses it and leaves its bytes alone unless overwrite, and with overwrite the earlier run
// stays until Close moved the new one in.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/file.h"
#include "upguard/recorder.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;

std::string FreshDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("upguard_run_place_test_" + name);
  fs::remove_all(dir);
  return dir.string();
}

// Records one op of `value` into options.run_dir and closes.
void RecordOne(const RecorderOptions& options, float value) {
  StatusOr<std::unique_ptr<Recorder>> recorder = Recorder::Open(options);
  ASSERT_TRUE(recorder.ok()) << recorder.status().message();
  float x[2] = {value, value};
  int64_t sizes[] = {2}, strides[] = {1};
  OpEvent op;
  op.op = "engine::copy";
  op.outputs = {Arg::Tensor("out", {DType::kFloat32, sizes, strides, 1, x})};
  (*recorder)->Record(op);
  ASSERT_TRUE((*recorder)->Close().ok());
}

std::vector<std::string> Hidden(const std::string& dir) {
  std::vector<std::string> hidden;
  const std::vector<std::string> names = ListDirectory(dir).value();
  for (const std::string& name : names) {
    if (name.rfind(".upguard-", 0) == 0) hidden.push_back(name);
  }
  return hidden;
}

TEST(RunPlaceTest, ARunIsRefusedUnlessOverwriteAndReplacedOnlyAtClose) {
  RecorderOptions options;
  options.run_dir = FreshDir("refuse");
  RecordOne(options, 1);
  const std::string trace = options.run_dir + "/rank0.ugt";
  const std::string old_trace = ReadFileToString(trace).value();
  const std::string old_meta = ReadFileToString(options.run_dir + "/meta.json").value();

  StatusOr<std::unique_ptr<Recorder>> refused = Recorder::Open(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find(options.run_dir + " already holds a run"),
            std::string::npos);
  EXPECT_NE(refused.status().message().find("RecorderOptions::overwrite"), std::string::npos);
  EXPECT_EQ(ReadFileToString(trace).value(), old_trace);
  EXPECT_EQ(ReadFileToString(options.run_dir + "/meta.json").value(), old_meta);
  EXPECT_TRUE(Hidden(options.run_dir).empty());

  options.overwrite = true;
  StatusOr<std::unique_ptr<Recorder>> again = Recorder::Open(options);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_NE((*again)->trace_path().find(options.run_dir + "/.upguard-record-"), std::string::npos);
  (*again)->MarkStep();
  EXPECT_EQ(ReadFileToString(trace).value(), old_trace);  // until Close
  ASSERT_TRUE((*again)->Close().ok());
  EXPECT_EQ((*again)->trace_path(), trace);
  EXPECT_NE(ReadFileToString(trace).value(), old_trace);
  EXPECT_TRUE(Hidden(options.run_dir).empty());
}

TEST(RunPlaceTest, AFileUpguardDidNotWriteIsRefusedEvenWithOverwrite) {
  RecorderOptions options;
  options.run_dir = FreshDir("foreign");
  options.overwrite = true;
  for (const char* name : {"meta.json", "rank0.ugt"}) {
    fs::remove_all(options.run_dir);
    fs::create_directories(options.run_dir);
    ASSERT_TRUE(WriteFileAtomically(options.run_dir + "/" + name, "someone else's").ok());
    StatusOr<std::unique_ptr<Recorder>> refused = Recorder::Open(options);
    ASSERT_FALSE(refused.ok()) << name;
    EXPECT_NE(refused.status().message().find("was not written by upguard"), std::string::npos);
    EXPECT_EQ(ReadFileToString(options.run_dir + "/" + name).value(), "someone else's");
    EXPECT_EQ(ListDirectory(options.run_dir).value(), std::vector<std::string>{name});
  }
}

}  // namespace
}  // namespace upguard
