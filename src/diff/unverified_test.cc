// What the diff says of tensors it did not read (ArgKind::kUnread, and opaque in traces of
// version 5 and older): never identical; unverified, with how many and why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "diff/diff.h"
#include "trace/format.h"
#include "trace/text_format.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;

// Two runs of one op on two steps, the op's input given by `in` (a text-form argument).
struct Runs {
  std::string a, b;
};

StatusOr<Runs> WriteRuns(const std::string& name, const std::string& in_a, const std::string& in_b,
                         int version = kTraceVersion) {
  const fs::path root =
      fs::temp_directory_path() / ("upguard_unverified_" + std::to_string(::getpid())) / name;
  fs::remove_all(root);
  Runs runs{(root / "a").string(), (root / "b").string()};
  for (const auto& [dir, in] : {std::pair{runs.a, in_a}, std::pair{runs.b, in_b}}) {
    fs::create_directories(dir);
    std::string text = "meta {\"argv\":[\"train.py\"]}\n";
    for (int step = 0; step < 2; ++step) {
      text += "op step=" + std::to_string(step) +
              " phase=forward name=aten::relu module=act site=model.py:6\n  in self " + in +
              "\n  out tensor float32[4] digest=@y" + std::to_string(step) + "\nstepend " +
              std::to_string(step) + "\n";
    }
    text += "end\n";
    const std::string path = dir + "/rank0.ugt";
    RETURN_IF_ERROR(WriteTraceFromText(text, name, path));
    if (version != kTraceVersion) {  // an older writer's header (no CRC covers it)
      std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
      char bytes[2];
      StoreLe16(static_cast<uint16_t>(version), bytes);
      file.seekp(8);
      file.write(bytes, 2);
    }
  }
  return runs;
}

StatusOr<DiffResult> Diff(const Runs& runs) {
  ASSIGN_OR_RETURN(Run a, LoadRun(runs.a, LoadOptions{}));
  ASSIGN_OR_RETURN(Run b, LoadRun(runs.b, LoadOptions{}));
  return DiffRuns(a, b, DiffOptions{});
}

TEST(UnverifiedTest, AnOldTracesOpaqueTensorsAreCountedNotCalledEqual) {
  // Version 5 wrote opaque, with no reason and no tally: the diff tallies the decoded ops.
  StatusOr<Runs> runs = WriteRuns("v5", "opaque float32[4]", "opaque float32[4]", 5);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  StatusOr<DiffResult> result = Diff(*runs);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->verdict, Verdict::kUnverified);
  ASSERT_EQ(result->unread_a.size(), 1u);
  EXPECT_EQ(result->unread_a[0].reason, UnreadReason::kUnknown);
  EXPECT_EQ(result->unread_a[0].ops, 2u);
  EXPECT_EQ(result->unread_a[0].tensors, 2u);
}

TEST(UnverifiedTest, ATensorReadInOneRunAndNotInTheOtherIsNotADifference) {
  // A CPU run against a GPU one: the input is not known to differ, and the op's differing output
  // cannot be blamed on it.
  StatusOr<Runs> runs = WriteRuns("mixed", "tensor float32[4] digest=@x",
                                  "unread float32[4] reason=device detail=cuda:0");
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  StatusOr<DiffResult> result = Diff(*runs);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->verdict, Verdict::kUnverified);
  EXPECT_TRUE(result->unread_a.empty());
  ASSERT_EQ(result->unread_b.size(), 1u);
  EXPECT_EQ(result->unread_b[0].detail, "cuda:0");
}

TEST(UnverifiedTest, AnInFlightInputAloneLeavesTheRunIdenticalButNoCulprit) {
  // The values a collective wrote are compared at its completion: in flight alone hides none.
  StatusOr<Runs> runs = WriteRuns("in_flight", "unread float32[4] reason=in_flight",
                                  "unread float32[4] reason=in_flight");
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  StatusOr<DiffResult> result = Diff(*runs);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->verdict, Verdict::kIdentical);
  ASSERT_EQ(result->unread_a.size(), 1u);
  EXPECT_EQ(result->unread_a[0].reason, UnreadReason::kInFlight);
}

}  // namespace
}  // namespace upguard
