// Argument labels (trace.md §5.3.2): the optional block after an Op's outputs. Written == read
// back, absent when no argument has a label (the bytes of a trace without labels do not change),
// outside every digest, and a malformed block is damage that names the op.
#include <gtest/gtest.h>

#include "trace/record_codec.h"
#include "trace/step_digest.h"
#include "trace/trace_test_util.h"

namespace upguard {
namespace {

using testing::ReadAll;
using testing::TempTracePath;

// Strings 1 "aten::zero_", 2 "self", 3 "fc.bias.grad", 4 "fc.weight", as in the example.
struct Example {
  StringTable strings;
  OpRecord op;
  Example() {
    op.phase = Phase::kOptimizer;
    op.op = strings.Intern("aten::zero_");
    ArgRecord grad;
    grad.kind = ArgKind::kAlias;
    grad.dtype = DType::kFloat32;
    grad.shape = {4};
    op.outputs.push_back(grad);
    grad.name = strings.Intern("self");
    op.inputs.push_back(grad);
    op.inputs[0].label = op.outputs[0].label = strings.Intern("fc.bias.grad");
    strings.Intern("fc.weight");
  }
  std::string Payload() const {
    std::string payload;
    const Status status = EncodeOp(op, 0, strings, &payload);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return payload;
  }
};

std::string Bytes(std::initializer_list<uint8_t> bytes) {
  return std::string(bytes.begin(), bytes.end());
}

// The example's payload up to its outputs.
std::string Unlabelled() {
  return Bytes({0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00,  // op
                0x01, 0x03, 0x02, 0x01, 0x01, 0x04,              // input
                0x01, 0x03, 0x00, 0x01, 0x01, 0x04});            // output
}

// The example bytes of trace.md §5.3.2.
TEST(LabelsTest, DocumentedExampleBytes) {
  Example example;
  EXPECT_EQ(example.Payload(), Unlabelled() + Bytes({0x02, 0x00, 0x03, 0x01, 0x03}));
  example.op.inputs[0].label = kEmptyString;
  EXPECT_EQ(example.Payload(), Unlabelled() + Bytes({0x01, 0x01, 0x03}));
  example.op.outputs[0].label = kEmptyString;
  EXPECT_EQ(example.Payload(), Unlabelled()) << "no label: no block, the bytes of before";
}

TEST(LabelsTest, DecodedLabelsAndAReusedRecord) {
  Example example;
  example.op.outputs[0].label = 4;
  OpRecord op;
  RecordError error;
  ASSERT_TRUE(DecodeOp(example.Payload(), example.strings, &op, &error)) << error.detail;
  EXPECT_EQ(op.inputs[0].label, 3u);
  EXPECT_EQ(op.outputs[0].label, 4u);
  ASSERT_TRUE(DecodeOp(Unlabelled(), example.strings, &op, &error)) << error.detail;
  EXPECT_EQ(op.inputs[0].label, kEmptyString);
  EXPECT_EQ(op.outputs[0].label, kEmptyString);
  // An empty block, and bytes after the block (later fields), are fine.
  ASSERT_TRUE(DecodeOp(Unlabelled() + Bytes({0x00, 0x7f}), example.strings, &op, &error));
  EXPECT_EQ(op.inputs[0].label, kEmptyString);
  ASSERT_TRUE(
      DecodeOp(Unlabelled() + Bytes({0x01, 0x00, 0x04, 0xff, 0xff}), example.strings, &op, &error));
  EXPECT_EQ(op.inputs[0].label, 4u);
  EXPECT_EQ(op.outputs[0].label, kEmptyString);
}

TEST(LabelsTest, AMalformedBlockIsDamageNamingTheOp) {
  Example example;
  const struct {
    std::string block;
    const char* reason;
    const char* detail;
  } cases[] = {
      {Bytes({0x01, 0x02, 0x03}), "malformed Op record",
       "labels of aten::zero_ (seq 0): slot 2 is not an argument (1 inputs, 1 outputs)"},
      {Bytes({0x02, 0x01, 0x03, 0x00, 0x03}), "malformed Op record",
       "labels of aten::zero_ (seq 0): slot 0 follows slot 1 (slots must increase)"},
      {Bytes({0x02, 0x00, 0x03, 0x00, 0x04}), "malformed Op record",
       "labels of aten::zero_ (seq 0): slot 0 follows slot 0 (slots must increase)"},
      {Bytes({0x01, 0x00, 0x00}), "malformed Op record",
       "labels of aten::zero_ (seq 0): slot 0 has label string id 0 (the empty string is no "
       "label)"},
      {Bytes({0x01, 0x01, 0x05}), "undefined string id 5",
       "in the label of slot 1 of aten::zero_ (seq 0)"},
      {Bytes({0x02, 0x00, 0x03}), "malformed Op record", "payload ends inside label slot"},
      {Bytes({0x01, 0x00}), "malformed Op record", "payload ends inside label"},
      {Bytes({0x09, 0x00, 0x03}), "malformed Op record", "labels 9 exceeds the payload"},
  };
  for (const auto& c : cases) {
    OpRecord op;
    RecordError error;
    EXPECT_FALSE(DecodeOp(Unlabelled() + c.block, example.strings, &op, &error));
    EXPECT_EQ(error.reason, c.reason);
    EXPECT_EQ(error.detail, c.detail);
  }
  // Written by a writer that checks its ids: an id it never interned is refused.
  example.op.inputs[0].label = 99;
  std::string payload;
  const Status status = EncodeOp(example.op, 0, example.strings, &payload);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("label string id 99"), std::string::npos) << status.message();
}

TEST(LabelsTest, TheReaderReportsABadBlockAtItsRecord) {
  Example example;
  const std::string path = TempTracePath("bad_labels.ugt");
  auto writer = TraceWriter::Create(path, "{}");
  ASSERT_TRUE(writer.ok());
  for (const char* s : {"aten::zero_", "self", "fc.bias.grad"}) (*writer)->Intern(s);
  ASSERT_TRUE((*writer)->Close().ok());
  std::string bytes = testing::ReadBytes(path);
  const testing::FrameSpan end = testing::FrameSpans(bytes).back();
  bytes.insert(end.start,
               testing::Frame(RecordType::kOp, Unlabelled() + Bytes({0x01, 0x07, 0x03})));
  testing::WriteBytes(path, bytes);
  const auto back = ReadAll(path);
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(back->damage.has_value());
  EXPECT_EQ(back->damage->offset, end.start);
  EXPECT_NE(back->damage->message.find(
                "malformed Op record at byte " + std::to_string(end.start) +
                " (labels of aten::zero_ (seq 0): slot 7 is not an argument (1 inputs, 1 "
                "outputs))"),
            std::string::npos)
      << back->damage->message;
}

// A step of three ops, written with or without labels: the same ops, digests and step digest.
TEST(LabelsTest, WrittenReadBackAndOutsideTheStepDigest) {
  const char* labelled = R"(op phase=optimizer name=aten::mul_ site=adam.py:3
  in self tensor float32[4] digest=@v stats=min:0,max:1,mean:0.5,l2:1,finite:4 label='exp_avg_sq of fc.weight'
  in other tensor float32[4] digest=@g label=fc.weight.grad
  in alpha scalar '0.1'
  out tensor float32[4] digest=@v2 stats=min:0,max:1,mean:0.5,l2:1,finite:4 label='exp_avg_sq of fc.weight'
op phase=optimizer name=aten::add_
  in self tensor float32[4] digest=@w
  out tensor float32[4] digest=@v stats=min:0,max:1,mean:0.5,l2:1,finite:4 label=fc.weight
op phase=optimizer name=aten::zero_
  in self alias float32[4] label=fc.weight.grad
  out alias float32[4]
stepend 0
end
)";
  std::string plain = labelled;
  for (size_t at; (at = plain.find(" label=")) != std::string::npos;) {
    plain.erase(at, plain.find('\n', at) - at);
  }
  const std::string with_path = TempTracePath("with.ugt");
  const std::string without_path = TempTracePath("without.ugt");
  ASSERT_TRUE(WriteTraceFromText(labelled, "with", with_path).ok());
  ASSERT_TRUE(WriteTraceFromText(plain, "without", without_path).ok());
  const auto with = ReadAll(with_path);
  const auto without = ReadAll(without_path);
  ASSERT_TRUE(with.ok() && without.ok());
  ASSERT_FALSE(with->damage.has_value()) << with->damage->message;
  ASSERT_EQ(with->records.size(), 4u);
  ASSERT_EQ(without->records.size(), 4u);
  auto reader = TraceReader::Open(with_path);
  ASSERT_TRUE(reader.ok());
  TraceRecord record;
  ASSERT_TRUE(*(*reader)->Next(&record));
  const StringTable& strings = (*reader)->strings();
  EXPECT_EQ(strings.Get(record.op.inputs[0].label), "exp_avg_sq of fc.weight");
  EXPECT_EQ(strings.Get(record.op.inputs[1].label), "fc.weight.grad");
  EXPECT_EQ(record.op.inputs[2].label, kEmptyString);
  EXPECT_EQ(strings.Get(record.op.outputs[0].label), "exp_avg_sq of fc.weight");
  ASSERT_TRUE(*(*reader)->Next(&record));
  EXPECT_TRUE(record.op.outputs[0].has_stats) << "shared statistics resolve as before";
  EXPECT_EQ(record.op.outputs[0].stats.finite_count, 4u);
  EXPECT_EQ(strings.Get(record.op.outputs[0].label), "fc.weight");
  for (size_t record_idx = 0; record_idx < 3; ++record_idx) {
    const OpRecord& a = with->records[record_idx].op;
    const OpRecord& b = without->records[record_idx].op;
    ASSERT_EQ(a.inputs.size(), b.inputs.size());
    for (size_t arg_idx = 0; arg_idx < a.inputs.size(); ++arg_idx) {
      EXPECT_EQ(a.inputs[arg_idx].digest, b.inputs[arg_idx].digest);
    }
  }
  EXPECT_EQ(with->records[3].step_end.digest, without->records[3].step_end.digest);
  // The writer's step digest is the reader's: labels are not folded in either.
  while (*(*reader)->Next(&record)) {
  }
  StepDigester digester;
  for (size_t record_idx = 0; record_idx < 3; ++record_idx) {
    digester.AddOp(with->records[record_idx].op, strings);
  }
  EXPECT_EQ(digester.Finish(), with->records[3].step_end.digest);
}

TEST(LabelsTest, ACompletedCollectiveKeepsItsOpsOutputLabels) {
  OpRecord op;
  op.outputs.resize(2);
  op.outputs[0].label = 5;
  auto info = std::make_shared<CollectiveInfo>();
  info->completed = true;
  info->outputs.resize(2);
  info->outputs[0].kind = ArgKind::kTensor;
  AttachCollective(info, &op);
  EXPECT_EQ(op.outputs[0].kind, ArgKind::kTensor);
  EXPECT_EQ(op.outputs[0].label, 5u);
  EXPECT_EQ(op.outputs[1].label, kEmptyString);
  op.outputs.resize(1);  // not as many: the record's outputs as they are
  AttachCollective(info, &op);
  EXPECT_EQ(op.outputs.size(), 2u);
  EXPECT_EQ(op.outputs[0].label, kEmptyString);
}

}  // namespace
}  // namespace upguard
