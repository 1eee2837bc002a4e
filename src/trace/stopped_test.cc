// The Stopped record (trace.md §5.7): a writer's byte budget, a write the system refuses, and
// what readers make of a trace that ends with one.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "trace/trace_index.h"
#include "trace/trace_test_util.h"

namespace upguard {
namespace {

using testing::ReadAll;
using testing::TempTracePath;

// Writes steps of a few ops each until the writer refuses one; the step it refused in.
uint32_t WriteUntilRefused(TraceWriter* writer, Status* refused) {
  OpRecord op;
  op.op = writer->Intern("aten::mul");
  op.module = writer->Intern("layer0");
  ArgRecord out;
  out.kind = ArgKind::kTensor;
  out.dtype = DType::kFloat32;
  out.shape = {4, 4};
  for (uint32_t step = 0; step < 100000; ++step) {
    for (int op_idx = 0; op_idx < 5; ++op_idx) {
      op.step = step;
      out.digest = DigestBytes(&step, sizeof(step));
      op.outputs = {out};
      *refused = writer->WriteOp(op);
      if (!refused->ok()) return step;
    }
    *refused = writer->EndStep(step);
    if (refused->ok()) *refused = writer->Flush();
    if (!refused->ok()) return step;
  }
  return UINT32_MAX;
}

TEST(StoppedTest, BudgetKeepsTheFileWithinItAndEndsAtAWholeRecord) {
  const std::string path = TempTracePath("budget.ugt");
  auto writer = TraceWriter::Create(path, R"({"rank":0})", /*max_bytes=*/4096);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  Status refused;
  const uint32_t step = WriteUntilRefused(writer->get(), &refused);
  ASSERT_LT(step, 100u);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("reached its byte budget of 4.0 KiB"), std::string::npos)
      << refused.message();
  EXPECT_EQ((*writer)->failure_reason(), StopReason::kMaxBytes);
  const StoppedRecord stopped{step, StopReason::kMaxBytes, refused.message()};
  EXPECT_EQ((*writer)->Close(&stopped).code(), StatusCode::kFailedPrecondition);
  EXPECT_LE(std::filesystem::file_size(path), 4096u);

  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_FALSE(back->damage) << back->damage->message;
  EXPECT_FALSE(back->complete);
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  TraceRecord record;
  while (*(*reader)->Next(&record)) {
  }
  ASSERT_TRUE((*reader)->stopped());
  EXPECT_EQ((*reader)->stopped()->step, step);
  EXPECT_EQ((*reader)->stopped()->reason, StopReason::kMaxBytes);
  EXPECT_EQ((*reader)->stopped()->message, refused.message());
  EXPECT_EQ(
      StoppedNote(*(*reader)->stopped()),
      "incomplete: recording stopped at step " + std::to_string(step) + " (--max-bytes reached)");

  auto index = TraceIndex::Open(path);  // the diff's reader says the same
  ASSERT_TRUE(index.ok());
  ASSERT_TRUE((*index)->IndexAll().ok());
  EXPECT_FALSE((*index)->damage());
  ASSERT_TRUE((*index)->stopped());
  EXPECT_EQ((*index)->stopped()->step, step);
}

TEST(StoppedTest, BudgetBelowTheHeaderIsRefusedAtCreate) {
  const Status status =
      TraceWriter::Create(TempTracePath("tiny.ugt"), "{}", /*max_bytes=*/100).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("give at least"), std::string::npos) << status.message();
}

// A child under `ulimit -f` (SIGXFSZ ignored, so write() fails with EFBIG, as a full disk fails
// with ENOSPC): the torn record is cut off and the Stopped record follows the last whole one.
TEST(StoppedTest, RefusedWriteIsCutBackToTheLastWholeRecord) {
  const std::string path = TempTracePath("fsize.ugt");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{10000, 10000};
    setrlimit(RLIMIT_FSIZE, &limit);
    auto writer = TraceWriter::Create(path, R"({"rank":0})");
    if (!writer.ok()) _exit(3);
    Status refused;
    const uint32_t step = WriteUntilRefused(writer->get(), &refused);
    const bool efbig = refused.message().find("File too large") != std::string::npos;
    const StoppedRecord stopped{step, (*writer)->failure_reason(), refused.message()};
    (void)(*writer)->Close(&stopped);
    _exit(efbig && stopped.reason == StopReason::kFileTooLarge ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_LE(std::filesystem::file_size(path), 10000u);
  auto back = ReadAll(path);  // no damage: without the cut, the file ends inside a record
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_FALSE(back->damage) << back->damage->message;
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  TraceRecord record;
  while (*(*reader)->Next(&record)) {
  }
  ASSERT_TRUE((*reader)->stopped());
  EXPECT_EQ((*reader)->stopped()->reason, StopReason::kFileTooLarge);
  EXPECT_GT((*reader)->stopped()->step, 0u);
}

TEST(StoppedTest, DataAfterTheStoppedRecordIsDamage) {
  const std::string path = TempTracePath("after.ugt");
  ASSERT_TRUE(WriteTraceFromText("op name=f\nstopped 0 reason=disk_full\n", "t", path).ok());
  auto bytes = ReadFileToString(path);
  ASSERT_TRUE(bytes.ok());
  std::string payload;
  EncodeEnd(1, &payload);
  ASSERT_TRUE(WriteFileAtomically(path, *bytes + testing::Frame(RecordType::kEnd, payload)).ok());
  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(back->damage);
  EXPECT_NE(back->damage->message.find("unexpected data after the Stopped record"),
            std::string::npos)
      << back->damage->message;
}

TEST(StoppedTest, UnknownReasonReadsAsAnErrorAndTheTextFormRoundTrips) {
  StoppedRecord stopped;
  RecordError error;
  ASSERT_TRUE(DecodeStopped(std::string("\x03\x09why", 5), &stopped, &error));
  EXPECT_EQ(stopped.step, 3u);
  EXPECT_EQ(stopped.reason, StopReason::kError);
  EXPECT_EQ(stopped.message, "why");
  EXPECT_FALSE(DecodeStopped(std::string("\x03", 1), &stopped, &error));

  const std::string path = TempTracePath("text.ugt");
  ASSERT_TRUE(
      WriteTraceFromText("op name=f\nstepend 0\nstopped 1 reason=max_bytes\n", "t", path).ok());
  auto text = TraceToText(path);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("\nstopped 1 reason=max_bytes\n"), std::string::npos) << *text;
  EXPECT_EQ(text->find("\nend\n"), std::string::npos) << *text;
  EXPECT_FALSE(WriteTraceFromText("stopped 1 reason=sunspots\n", "t", path).ok());
}

}  // namespace
}  // namespace upguard
