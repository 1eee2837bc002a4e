// Statistics shared with an earlier tensor of the step (trace.md §5.3.1): which arguments the
// writer leaves them out of, that TraceReader and TraceIndex fill them back in, and what a
// dangling or malformed share is.
#include "trace/shared_stats.h"

#include <gtest/gtest.h>

#include "trace/record_codec.h"
#include "trace/trace_index.h"
#include "trace/trace_test_util.h"
#include "trace/varint.h"

namespace upguard {
namespace {

using testing::FrameSpans;
using testing::ReadAll;
using testing::TempTracePath;

// Step 3: x is written by `a` and read by `b` (shared twice); `c` has step 4 with no StepEnd
// between (a new scope: x written in full again) and reads x twice (the second shared); after
// StepEnd 4, `d` reads x in full. y is x's digest without statistics (an int tensor would have
// none): never shared.
constexpr const char* kTrace = R"(op step=3 name=a
  out tensor float32[2] digest=@x stats=min:1,max:2,mean:1.5,l2:2.25,finite:2
op step=3 name=b
  in self tensor float32[2] digest=@x stats=min:1,max:2,mean:1.5,l2:2.25,finite:2
  in other tensor float32[2] digest=@y
  out tensor float32[2] digest=@x stats=min:1,max:2,mean:1.5,l2:2.25,finite:2
op step=4 name=c
  in self tensor float32[2] digest=@x stats=min:1,max:2,mean:1.5,l2:2.25,finite:2
  in other tensor float32[2] digest=@x stats=min:1,max:2,mean:1.5,l2:2.25,finite:2
stepend 4
op step=4 name=d
  in self tensor float32[2] digest=@x stats=min:1,max:2,mean:1.5,l2:2.25,finite:2
stepend 4
end
)";

// Each op's tensor args, inputs then outputs, as decoded before resolution: 'F' statistics
// written, 'S' shared, '-' none.
std::vector<std::string> SharingPattern(const std::string& path) {
  const std::string bytes = testing::ReadBytes(path);
  StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::Open(path);
  EXPECT_TRUE(reader.ok());
  TraceRecord record;
  while (*(*reader)->Next(&record)) {
  }
  std::vector<std::string> patterns;
  for (const testing::FrameSpan& span : FrameSpans(bytes)) {
    if (span.type != static_cast<uint8_t>(RecordType::kOp)) continue;
    const std::string_view payload(bytes.data() + span.start + kFrameHeaderBytes,
                                   span.end - span.start - kFrameOverheadBytes);
    OpRecord op;
    RecordError error;
    EXPECT_TRUE(DecodeOp(payload, (*reader)->strings(), &op, &error)) << error.reason;
    std::string pattern;
    for (const auto* args : {&op.inputs, &op.outputs}) {
      for (const ArgRecord& arg : *args)
        pattern += !arg.has_stats ? '-' : arg.stats_shared ? 'S' : 'F';
    }
    patterns.push_back(pattern);
  }
  return patterns;
}

TEST(SharedStatsTest, WriterSharesWithinAStepScopeOnly) {
  const std::string path = TempTracePath("shared.ugt");
  ASSERT_TRUE(WriteTraceFromText(kTrace, "shared", path).ok());
  EXPECT_EQ(SharingPattern(path), (std::vector<std::string>{"F", "S-S", "FS", "F"}));
}

TEST(SharedStatsTest, ReaderAndIndexFillSharedStatisticsBackIn) {
  const std::string path = TempTracePath("resolved.ugt");
  ASSERT_TRUE(WriteTraceFromText(kTrace, "resolved", path).ok());
  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->damage.has_value());
  std::vector<std::string> from_reader;
  for (const TraceRecord& record : back->records) {
    if (record.type != RecordType::kOp) continue;
    for (const auto* args : {&record.op.inputs, &record.op.outputs}) {
      for (const ArgRecord& arg : *args) {
        EXPECT_FALSE(arg.stats_shared);
        if (!arg.has_stats) continue;
        EXPECT_EQ(arg.stats.max, 2.0);
        EXPECT_EQ(arg.stats.mean, 1.5);
        EXPECT_EQ(arg.stats.finite_count, 2u);
      }
    }
  }
  // The text form shows resolved statistics, so it reads back to the text it was written from.
  StatusOr<std::string> text = TraceToText(path);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("name=d\n  in self tensor float32[2] digest="), std::string::npos);

  StatusOr<std::unique_ptr<TraceIndex>> index = TraceIndex::Open(path);
  ASSERT_TRUE(index.ok());
  ASSERT_TRUE((*index)->IndexAll().ok());
  ASSERT_EQ((*index)->steps().size(), 3u);
  size_t op_idx = 0;
  for (size_t step_idx = 0; step_idx < 3; ++step_idx) {
    std::vector<OpRecord> ops;
    ASSERT_FALSE((*index)->ReadStep(step_idx, &ops).has_value());
    for (const OpRecord& op : ops) {
      const OpRecord* expected = nullptr;
      while (back->records[op_idx].type != RecordType::kOp) ++op_idx;
      expected = &back->records[op_idx++].op;
      ASSERT_EQ(op.inputs.size(), expected->inputs.size());
      for (size_t arg_idx = 0; arg_idx < op.inputs.size(); ++arg_idx) {
        EXPECT_FALSE(op.inputs[arg_idx].stats_shared);
        EXPECT_EQ(op.inputs[arg_idx].stats.l2, expected->inputs[arg_idx].stats.l2);
      }
    }
  }
}

// An Op payload (seq 0, step 0) with one tensor input whose flags byte is `flags`.
std::string OneTensorOp(uint8_t flags) {
  std::string payload;
  for (uint64_t field : {0, 0}) AppendVarint(field, &payload);  // seq, step
  payload.push_back(0);                                         // phase
  for (uint64_t field : {0, 0, 0, 0, 0, 1}) AppendVarint(field, &payload);
  payload.push_back(static_cast<char>(ArgKind::kTensor));
  AppendVarint(0, &payload);  // name
  payload.push_back(static_cast<char>(DType::kFloat32));
  AppendVarint(1, &payload);  // ndim
  AppendVarint(2, &payload);  // dims
  AppendDigest(Digest128{1, 2}, &payload);
  payload.push_back(static_cast<char>(flags));
  AppendVarint(0, &payload);  // no outputs
  return payload;
}

TEST(SharedStatsTest, ADanglingOrMalformedShareIsDamageAtItsRecord) {
  const std::string path = TempTracePath("dangling.ugt");
  struct Case {
    uint8_t flags;
    const char* message;
  };
  for (const Case& c : {Case{3, "shared statistics without an earlier tensor at byte "},
                        Case{2, "reserved bits set in flags byte 2"}}) {
    std::string bytes = EncodeFileHeader(MakeFileHeader());
    std::string frame;
    BeginFrame(&frame);
    frame += "{}";
    FinishFrame(RecordType::kRunMeta, &frame);
    bytes += frame;
    const size_t op_offset = bytes.size();
    BeginFrame(&frame);
    frame += OneTensorOp(c.flags);
    FinishFrame(RecordType::kOp, &frame);
    bytes += frame;
    testing::WriteBytes(path, bytes);
    auto back = ReadAll(path);
    ASSERT_TRUE(back.ok());
    ASSERT_TRUE(back->damage.has_value());
    EXPECT_EQ(back->damage->offset, op_offset);
    EXPECT_NE(back->damage->message.find(c.message), std::string::npos) << back->damage->message;

    StatusOr<std::unique_ptr<TraceIndex>> index = TraceIndex::Open(path);
    ASSERT_TRUE(index.ok());
    ASSERT_TRUE((*index)->IndexAll().ok());
    if ((*index)->steps().empty()) continue;  // the index already refused the record
    std::vector<OpRecord> ops;
    const std::optional<TraceDamage> damage = (*index)->ReadStep(0, &ops);
    ASSERT_TRUE(damage.has_value());
    EXPECT_EQ(damage->offset, op_offset);
    EXPECT_NE(damage->message.find(c.message), std::string::npos) << damage->message;
  }
}

}  // namespace
}  // namespace upguard
