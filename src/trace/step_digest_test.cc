#include "trace/step_digest.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <map>

#include "trace/format.h"
#include "trace/trace_test_util.h"

namespace upguard {
namespace {

class TraceStepDigestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    op_.op = strings_.Intern("aten::mul");
    op_.module = strings_.Intern("blocks.0.attn");
    op_.call_site = strings_.Intern("model.py:12");
    ArgRecord tensor;
    tensor.kind = ArgKind::kTensor;
    tensor.dtype = DType::kFloat32;
    tensor.shape = {2, 2};
    tensor.digest = Digest128{0x0123456789ABCDEFull, 0xFEDCBA9876543210ull};
    ArgRecord scalar;
    scalar.kind = ArgKind::kScalar;
    scalar.text = strings_.Intern("2.0");
    ArgRecord alias;
    alias.kind = ArgKind::kAlias;
    alias.dtype = DType::kFloat32;
    alias.shape = {4};
    op_.inputs = {tensor, scalar};
    op_.outputs = {tensor, alias};
    op_.outputs[0].digest.low ^= 1;
  }

  Digest128 DigestOf(const std::vector<OpRecord>& ops) {
    StepDigester digester;
    for (const OpRecord& op : ops) digester.AddOp(op, strings_);
    EXPECT_EQ(digester.op_count(), ops.size());
    return digester.Finish();
  }

  StringTable strings_;
  OpRecord op_;
};

// The spec's byte string (trace.md §5.4), built by hand: a second route to the same digest.
TEST_F(TraceStepDigestTest, MatchesTheSpecByteString) {
  std::string bytes = "aten::mul";
  bytes.push_back('\x00');
  bytes.push_back(static_cast<char>(ArgKind::kTensor));
  AppendDigest(op_.inputs[0].digest, &bytes);
  bytes.push_back(static_cast<char>(ArgKind::kScalar));
  AppendDigest(DigestBytes("2.0", 3), &bytes);
  bytes.push_back('\xFF');
  bytes.push_back(static_cast<char>(ArgKind::kTensor));
  AppendDigest(op_.outputs[0].digest, &bytes);
  bytes.push_back(static_cast<char>(ArgKind::kAlias));
  bytes.push_back(static_cast<char>(DType::kFloat32));  // version 3: dtype and shape
  bytes.push_back('\x01');
  bytes.push_back('\x04');
  bytes.push_back('\xFF');
  const XXH128_hash_t expected = XXH3_128bits(bytes.data(), bytes.size());
  EXPECT_EQ(DigestOf({op_}), (Digest128{expected.high64, expected.low64}));
  const XXH128_hash_t empty = XXH3_128bits("", 0);
  EXPECT_EQ(DigestOf({}), (Digest128{empty.high64, empty.low64}));
}

TEST_F(TraceStepDigestTest, NamesDoNotCountValuesDo) {
  const Digest128 base = DigestOf({op_, op_});
  EXPECT_EQ(DigestOf({op_, op_}), base);

  OpRecord renamed = op_;
  renamed.module = strings_.Intern("blocks.7.attn");
  renamed.call_site = strings_.Intern("other.py:1");
  renamed.node = strings_.Intern("MulBackward0");
  renamed.phase = Phase::kBackward;
  renamed.inputs[1].digest = Digest128{1, 1};  // a scalar's digest comes from its text
  renamed.inputs[0].has_stats = true;
  renamed.inputs[0].stats.max = 99;
  EXPECT_EQ(DigestOf({op_, renamed}), base);

  auto differs = [&](const OpRecord& changed) { return DigestOf({op_, changed}) != base; };
  OpRecord changed = op_;
  changed.inputs[0].digest.high ^= 1;
  EXPECT_TRUE(differs(changed)) << "input digest";
  changed = op_;
  changed.outputs[0].digest.low ^= 2;
  EXPECT_TRUE(differs(changed)) << "output digest";
  changed = op_;
  changed.inputs[1].text = strings_.Intern("3.0");
  EXPECT_TRUE(differs(changed)) << "scalar text";
  changed = op_;
  changed.op = strings_.Intern("aten::add");
  EXPECT_TRUE(differs(changed)) << "op name";
  changed = op_;
  changed.outputs[1].kind = ArgKind::kUninit;
  EXPECT_TRUE(differs(changed)) << "arg kind";
  changed = op_;
  changed.outputs[1].shape = {2, 2};
  EXPECT_TRUE(differs(changed)) << "alias shape (the diff compares it)";
  changed = op_;
  changed.outputs[1].dtype = DType::kFloat64;
  EXPECT_TRUE(differs(changed)) << "alias dtype";
  changed = op_;
  changed.outputs.insert(changed.outputs.begin(), changed.inputs.back());
  changed.inputs.pop_back();
  EXPECT_TRUE(differs(changed)) << "an input moved to the outputs";
  EXPECT_NE(DigestOf({op_}), base) << "op count";
}

TEST_F(TraceStepDigestTest, ResetStartsAFreshStep) {
  StepDigester digester;
  digester.AddOp(op_, strings_);
  const Digest128 one = digester.Finish();
  digester.AddOp(op_, strings_);
  digester.Reset();
  EXPECT_EQ(digester.op_count(), 0u);
  digester.AddOp(op_, strings_);
  EXPECT_EQ(digester.Finish(), one);
}

// What the writer stores equals what a verifier recomputes from the records read back: the ops,
// then the collectives by op_seq (trace.md §5.4).
TEST_F(TraceStepDigestTest, WrittenStepEndsVerify) {
  const std::string path = testing::TempTracePath("steps.ugt");
  testing::WriteSampleTrace(path);
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  StepDigester digester;
  TraceRecord record;
  int step_ends = 0;
  uint64_t first_seq = 0;
  std::map<uint64_t, std::shared_ptr<const CollectiveInfo>> collectives;
  while (true) {
    auto more = (*reader)->Next(&record);
    ASSERT_TRUE(more.ok());
    if (!*more) break;
    if (record.type == RecordType::kOp) {
      if (digester.op_count() == 0) first_seq = record.op.seq;
      digester.AddOp(record.op, (*reader)->strings());
      continue;
    }
    if (record.type == RecordType::kCollective) {
      collectives[record.collective.op_seq] = record.collective.info;
      continue;
    }
    for (const auto& [op_seq, info] : collectives) {
      digester.AddCollective(op_seq - first_seq, *info, (*reader)->strings());
    }
    collectives.clear();
    EXPECT_EQ(record.step_end.op_count, digester.op_count());
    EXPECT_EQ(record.step_end.digest, digester.Finish());
    digester.Reset();
    ++step_ends;
  }
  EXPECT_EQ(step_ends, 2);
}

// Version 3: the digest covers what the diff compares. A nested op is vouched for by the
// top-level op after it when that op has a result, so scratch values inside an equal op do not
// count; nested ops of a top-level op without a result, and nested ops no top-level op
// encloses, do; input-pipeline ops never do.
TEST_F(TraceStepDigestTest, CoversWhatTheDiffCompares) {
  OpRecord nested = op_;
  nested.depth = 1;
  OpRecord top = op_;
  const Digest128 base = DigestOf({nested, top});
  OpRecord scratch = nested;
  scratch.outputs[0].digest.low ^= 4;
  EXPECT_EQ(DigestOf({scratch, top}), base) << "inside a top-level op with a result";
  OpRecord deeper = nested;
  deeper.depth = 2;
  deeper.outputs[0].digest.low ^= 8;
  EXPECT_EQ(DigestOf({deeper, scratch, top}), base) << "any depth";
  // Extra nested ops (a kernel's copy_ with more threads) do not change the digest either; the
  // StepEnd's op count still tells the steps apart.
  EXPECT_EQ(DigestOf({scratch, top}), DigestOf({top}));

  OpRecord no_result = op_;
  no_result.outputs.clear();
  EXPECT_NE(DigestOf({scratch, no_result}), DigestOf({nested, no_result}))
      << "nothing vouches inside an op without a result";
  EXPECT_NE(DigestOf({top, scratch}), DigestOf({top, nested})) << "no enclosing op: counted";

  OpRecord input = op_;
  input.phase = Phase::kInput;
  OpRecord other_input = input;
  other_input.outputs[0].digest.low ^= 16;
  EXPECT_EQ(DigestOf({input, top}), DigestOf({other_input, top})) << "input pipeline";
  EXPECT_EQ(DigestOf({input, top}), DigestOf({top, other_input}));
}

// Version 5: a collective is placed by its op's position among the step's ops that are not
// input-pipeline ops. A DataLoader's workers deliver batches when they are ready, so two
// identical DDP runs record a different number of input ops before an all-reduce; the
// collective's position among the compared ops is the same.
TEST_F(TraceStepDigestTest, CollectivesPlacedAmongComparedOps) {
  OpRecord input = op_;
  input.phase = Phase::kInput;
  CollectiveInfo info;
  info.seq = 3;
  info.completed = true;
  info.outputs = {op_.outputs[0]};
  // Ops in step order and the step index of the collective's op.
  auto digest_of = [&](const std::vector<OpRecord>& ops, uint64_t collective_op) {
    StepDigester digester;
    for (const OpRecord& op : ops) digester.AddOp(op, strings_);
    digester.AddCollective(collective_op, info, strings_);
    return digester.Finish();
  };
  const Digest128 base = digest_of({op_, op_, op_}, 1);
  EXPECT_EQ(digest_of({input, input, op_, op_, op_}, 3), base) << "input ops before";
  EXPECT_EQ(digest_of({op_, input, op_, input, input, op_}, 2), base) << "input ops around";
  EXPECT_EQ(digest_of({op_, op_, input, op_}, 1), base) << "input ops after";
  EXPECT_NE(digest_of({op_, op_, op_}, 2), base) << "another compared op's collective";
  EXPECT_NE(digest_of({input, op_, op_, op_}, 1), base) << "the compared op before it";
  // Reset forgets the step's input ops.
  StepDigester digester;
  digester.AddOp(input, strings_);
  digester.Reset();
  for (const OpRecord& op : {op_, op_, op_}) digester.AddOp(op, strings_);
  digester.AddCollective(1, info, strings_);
  EXPECT_EQ(digester.Finish(), base);
}

}  // namespace
}  // namespace upguard
