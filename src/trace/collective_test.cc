// Collective records (trace.md §5.6): written == read back, what the writer refuses, what
// readers call damage (TraceReader and TraceIndex alike), the step digest, and attaching the
// record to its op. (Every cut and flipped byte of a trace holding collectives, through every
// load route, is src/run/run_loader_test.cc with testing::kSampleTraceText.)
#include <gtest/gtest.h>
#include <xxhash.h>

#include "trace/record_codec.h"
#include "trace/trace_index.h"
#include "trace/trace_test_util.h"
#include "trace/varint.h"

namespace upguard {
namespace {

using testing::Frame;
using testing::ReadAll;
using testing::TempTracePath;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

ArgRecord Tensor(Digest128 digest, bool stats) {
  ArgRecord arg;
  arg.kind = ArgKind::kTensor;
  arg.dtype = DType::kFloat32;
  arg.shape = {4, 3};
  arg.digest = digest;
  arg.has_stats = stats;
  if (stats) arg.stats = TensorStats{-1.5, 1e300, 0.1, 3.25, uint64_t{1} << 40, 3, 2, 1};
  return arg;
}

TEST(CollectiveCodecTest, EncodedPayloadDecodesToTheSameFields) {
  StringTable strings;
  CollectiveInfo info;
  info.group = strings.Intern("tp");
  info.ranks = {4, 5, 6, 7, 2147483647};
  info.group_rank = 2;
  info.group_size = 5;
  info.seq = uint64_t{1} << 50;
  info.completed = true;
  info.ops_before_completion = 300;
  info.outputs = {Tensor(Digest128{1, 2}, true), Tensor(Digest128{3, 4}, false)};
  info.outputs[1].name = strings.Intern("out");
  std::string payload;
  ASSERT_TRUE(EncodeCollective(1234567, info, strings, &payload).ok());
  uint64_t op_seq = 0;
  CollectiveInfo back;
  RecordError error;
  ASSERT_TRUE(DecodeCollective(payload, strings, strings.size(), &op_seq, &back, &error))
      << error.reason << " " << error.detail;
  EXPECT_EQ(op_seq, 1234567u);
  EXPECT_EQ(back.group, info.group);
  EXPECT_EQ(back.ranks, info.ranks);
  EXPECT_EQ(back.group_rank, 2u);
  EXPECT_EQ(back.group_size, 5u);
  EXPECT_EQ(back.seq, info.seq);
  EXPECT_TRUE(back.completed);
  EXPECT_EQ(back.ops_before_completion, 300u);
  ASSERT_EQ(back.outputs.size(), 2u);
  EXPECT_EQ(back.outputs[0].digest, (Digest128{1, 2}));
  EXPECT_TRUE(back.outputs[0].has_stats);
  EXPECT_FALSE(back.outputs[0].stats_shared);
  EXPECT_EQ(back.outputs[0].stats.finite_count, uint64_t{1} << 40);
  EXPECT_EQ(back.outputs[0].stats.max, 1e300);
  EXPECT_FALSE(back.outputs[1].has_stats);
  EXPECT_EQ(back.outputs[1].name, info.outputs[1].name);
  EXPECT_EQ(back.outputs[1].shape, (std::vector<int64_t>{4, 3}));

  // The smallest record: an unknown group that did not complete.
  payload.clear();
  ASSERT_TRUE(EncodeCollective(0, CollectiveInfo{}, strings, &payload).ok());
  EXPECT_EQ(payload, std::string(9, '\0'));
}

TEST(CollectiveCodecTest, EncodeRefusesWhatNoReaderWouldAccept) {
  StringTable strings;
  std::string payload;
  CollectiveInfo pending;
  pending.outputs = {Tensor(Digest128{1, 2}, false)};
  EXPECT_TRUE(Contains(EncodeCollective(0, pending, strings, &payload).message(),
                       "1 outputs, but it did not complete"));
  CollectiveInfo negative;
  negative.ranks = {0, -1};
  EXPECT_TRUE(Contains(EncodeCollective(0, negative, strings, &payload).message(), "rank -1"));
  CollectiveInfo unknown;
  unknown.group = 9;
  EXPECT_TRUE(Contains(EncodeCollective(0, unknown, strings, &payload).message(),
                       "group string id 9 was not interned"));
  EXPECT_TRUE(payload.empty());
}

CollectiveInfo Completed(Digest128 digest) {
  CollectiveInfo info;
  info.completed = true;
  info.outputs = {Tensor(digest, true)};
  return info;
}

OpRecord Op(TraceWriter& writer, uint32_t step, std::string_view name) {
  OpRecord op;
  op.step = step;
  op.op = writer.Intern(name);
  return op;
}

// The writer keeps the placement rule: an op of the current step, at most once; refused records
// leave no trace.
TEST(CollectiveWriterTest, RefusesRecordsOutsideTheCurrentStep) {
  const std::string path = TempTracePath("placement.ugt");
  auto writer_or = TraceWriter::Create(path, "{}");
  ASSERT_TRUE(writer_or.ok());
  TraceWriter& writer = **writer_or;
  auto refused = [&](uint64_t op_seq, const std::string& why) {
    const Status status = writer.WriteCollective(op_seq, Completed(Digest128{7, 7}));
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << why;
    EXPECT_TRUE(Contains(status.message(), why)) << status.message();
  };
  refused(0, "op_seq 0 is not an op of the current step (no step is open)");
  ASSERT_TRUE(writer.WriteOp(Op(writer, 0, "a")).ok());
  ASSERT_TRUE(writer.WriteOp(Op(writer, 0, "c10d::allreduce_")).ok());
  refused(2, "op_seq 2 is not an op of the current step (seqs 0 to 1)");
  ASSERT_TRUE(writer.WriteCollective(1, Completed(Digest128{1, 1})).ok());
  refused(1, "a second Collective record for op 1");
  ASSERT_TRUE(writer.EndStep(0).ok());
  refused(1, "(no step is open)");
  ASSERT_TRUE(writer.WriteOp(Op(writer, 1, "b")).ok());
  refused(1, "op_seq 1 is not an op of the current step (seqs 2 to 2)");
  ASSERT_TRUE(writer.WriteOp(Op(writer, 2, "b")).ok());  // a new step without a StepEnd
  refused(2, "op_seq 2 is not an op of the current step (seqs 3 to 3)");
  ASSERT_TRUE(writer.WriteCollective(3, CollectiveInfo{}).ok());
  ASSERT_TRUE(writer.EndStep(2).ok());
  ASSERT_TRUE(writer.Close().ok());

  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->damage.has_value()) << back->damage->message;
  size_t collectives = 0;
  for (const TraceRecord& record : back->records) {
    collectives += record.type == RecordType::kCollective;
  }
  EXPECT_EQ(collectives, 2u);
}

// A trace of two ops in step 0 with no StepEnd and no End: frames appended to it come next.
std::string TwoOps() {
  const std::string path = TempTracePath("two_ops.ugt");
  const Status status = WriteTraceFromText(
      "op step=0 name=a\n  out tensor float32[4] digest=@x stats=min:1,max:2,finite:4\n"
      "op step=0 name=c10d::allreduce_\n  out alias float32[4]\n",
      "two ops", path);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return testing::ReadBytes(path);
}

// op_seq, group 0, group_rank 0, group_size 2, ranks [0,1], seq 0, `flags`, ops_before 0, then
// `outputs` (already encoded, count first).
std::string CollectivePayload(uint64_t op_seq, uint8_t flags,
                              const std::string& outputs = std::string(1, '\0')) {
  std::string payload;
  for (uint64_t field : {op_seq, uint64_t{0}, uint64_t{0}, uint64_t{2}, uint64_t{2}, uint64_t{0},
                         uint64_t{1}, uint64_t{0}}) {
    AppendVarint(field, &payload);
  }
  payload.push_back(static_cast<char>(flags));
  AppendVarint(0, &payload);
  return payload + outputs;
}

// One float32[4] tensor output with arg flags `arg_flags` (and no statistics bytes).
std::string OneOutput(uint8_t arg_flags) {
  // count 1, tensor, no name, float32, 1 dim of 4
  std::string out("\x01\x01\x00\x01\x01\x04", 6);
  std::string digest;
  AppendDigest(DigestBytes("x", 1), &digest);
  return out + digest + std::string(1, static_cast<char>(arg_flags));
}

// Both readers find the same damage at the same byte.
void ExpectDamage(const std::string& bytes, uint64_t offset, const std::string& reason) {
  SCOPED_TRACE(reason);
  const std::string path = TempTracePath("damaged.ugt");
  testing::WriteBytes(path, bytes);
  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(back->damage.has_value());
  EXPECT_EQ(back->damage->offset, offset);
  EXPECT_TRUE(Contains(back->damage->message, reason)) << back->damage->message;
  auto index = TraceIndex::Open(path);
  ASSERT_TRUE(index.ok());
  ASSERT_TRUE((*index)->IndexAll().ok());
  ASSERT_TRUE((*index)->damage().has_value());
  EXPECT_EQ((*index)->damage()->message, back->damage->message);
}

TEST(CollectiveDamageTest, MalformedOrMisplacedRecordsAreDamageAtTheirByte) {
  const std::string ops = TwoOps();
  const uint64_t at = ops.size();
  const std::string good = Frame(RecordType::kCollective, CollectivePayload(1, 1));
  ExpectDamage(ops + Frame(RecordType::kCollective, CollectivePayload(1, 0x02)), at,
               "malformed Collective record at byte " + std::to_string(at) +
                   " (reserved bits set in flags byte 2)");
  ExpectDamage(ops + Frame(RecordType::kCollective, CollectivePayload(1, 0, OneOutput(0))), at,
               "(outputs without completion)");
  ExpectDamage(ops + Frame(RecordType::kCollective, CollectivePayload(1, 1, OneOutput(0x03))), at,
               "(output 0: shared statistics)");
  ExpectDamage(ops + Frame(RecordType::kCollective, CollectivePayload(2, 1)), at,
               "(op_seq 2 is not an op of the current step (seqs 0 to 1))");
  ExpectDamage(ops + good + good, at + good.size(), "(a second Collective record for op 1)");
  ExpectDamage(ops + Frame(RecordType::kCollective, CollectivePayload(1, 1).substr(0, 9)), at,
               "malformed Collective record at byte " + std::to_string(at) +
                   " (payload ends inside ops_before_completion)");
  std::string step_end_payload;
  EncodeStepEnd(StepEndRecord{0, 2, Digest128{}}, &step_end_payload);
  const std::string step_end = Frame(RecordType::kStepEnd, step_end_payload);
  ExpectDamage(ops + step_end + good, at + step_end.size(), "(no step is open)");
  std::string big_rank;
  for (uint64_t field : {1, 0, 0, 1, 1}) AppendVarint(field, &big_rank);
  AppendVarint(uint64_t{1} << 31, &big_rank);
  ExpectDamage(ops + Frame(RecordType::kCollective, big_rank), at, "(rank 2147483648 is 2^31");
}

TEST(CollectiveDamageTest, AWellPlacedRecordReadsBack) {
  const std::string path = TempTracePath("good.ugt");
  const std::string trailing = CollectivePayload(1, 1) + "later fields";  // ignored (§5)
  testing::WriteBytes(path, TwoOps() + Frame(RecordType::kCollective, trailing));
  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->damage.has_value()) << back->damage->message;
  ASSERT_EQ(back->records.size(), 3u);
  EXPECT_EQ(back->records[2].type, RecordType::kCollective);
  EXPECT_EQ(back->records[2].collective.op_seq, 1u);
  EXPECT_EQ(back->records[2].collective.info->ranks, (std::vector<int32_t>{0, 1}));
}

// The StepEnd digest of a one-step trace written from `text`.
Digest128 StepDigestOf(const std::string& text) {
  const std::string path = TempTracePath("digest.ugt");
  const Status status = WriteTraceFromText(text, "digest", path);
  EXPECT_TRUE(status.ok()) << status.ToString();
  auto back = ReadAll(path);
  EXPECT_TRUE(back.ok());
  for (const TraceRecord& record : back->records) {
    if (record.type == RecordType::kStepEnd) return record.step_end.digest;
  }
  ADD_FAILURE() << "no StepEnd";
  return Digest128{};
}

std::string AllreduceStep(const std::string& collective, const std::string& output) {
  return "op name=a\n  out tensor float32[4] digest=@g\n"
         "op name=c10d::allreduce_\n  in t tensor float32[4] digest=@g\n  out alias float32[4]\n"
         "op name=b\n" +
         collective + "\n" + output + "stepend 0\n";
}

TEST(CollectiveStepDigestTest, ValuesAndCompletionChangeItTimingAndNamesDoNot) {
  const std::string line = "collective op=1 group=0 ranks=[0,1] group_size=2 seq=4";
  const std::string sum = "  out tensor float32[4] digest=@sum stats=min:1\n";
  const Digest128 base = StepDigestOf(AllreduceStep(line, sum));
  EXPECT_NE(StepDigestOf(AllreduceStep(line, "  out tensor float32[4] digest=@other\n")), base);
  EXPECT_NE(StepDigestOf(AllreduceStep(line, "")), base);
  EXPECT_NE(StepDigestOf(AllreduceStep("collective op=1 completed=0", "")),
            StepDigestOf(AllreduceStep("collective op=1", "")));
  EXPECT_NE(StepDigestOf(AllreduceStep("collective op=0", sum)), base) << "another op";
  // Not hashed: group, members, number, timing, statistics, argument names.
  EXPECT_EQ(StepDigestOf(AllreduceStep("collective op=1 group=7 ops_before_completion=9", sum)),
            base);
  EXPECT_EQ(StepDigestOf(AllreduceStep(line, "  out x tensor float32[4] digest=@sum\n")), base);
  // Without a collective the ops alone are hashed, as before §5.6.
  EXPECT_NE(StepDigestOf(AllreduceStep("", "")), base);
}

// The bytes trace.md §5.4 says are hashed, for one op and its collective.
TEST(CollectiveStepDigestTest, DocumentedBytes) {
  const Digest128 digest = StepDigestOf(
      "op name=c\n  out alias float32[4]\ncollective op=0\n  out tensor float32[4] digest=@s\n"
      "stepend 0\n");
  // The op, no inputs, an alias (dtype float32, 1 dimension of 4).
  std::string bytes = std::string("c\0\xFF\x03\x01\x01\x04\xFF", 8);
  bytes += std::string("\x06\x00\x01\x01", 4);  // mark, index 0, completed, tensor
  AppendDigest(DigestBytes("s", 1), &bytes);    // its digest
  bytes += "\xFF";                              // end of the outputs
  const XXH128_hash_t expected = XXH3_128bits(bytes.data(), bytes.size());
  EXPECT_EQ(digest, (Digest128{expected.high64, expected.low64}));
}

constexpr const char* kAttach = R"(op step=0 name=c10d::allreduce_
  in t tensor float32[4] digest=@g
  out alias float32[4]
op step=0 name=c10d::broadcast_
  out alias float32[2]
collective op=0 group=0 ranks=[0,1] group_size=2 seq=3 ops_before_completion=1
  out tensor float32[4] digest=@sum stats=min:1,max:2,finite:4
op step=0 name=aten::mul
  in self tensor float32[4] digest=@sum stats=min:1,max:2,finite:4
  out tensor float32[4] digest=@y
collective op=1 completed=0
stepend 0
end
)";

// TraceIndex::ReadStep attaches what TraceReader yields: a completed collective's outputs replace
// the op's, an uncompleted one leaves them. A later op with the collective's digest carries its
// own statistics (a Collective record is outside the §5.3.1 scope).
TEST(CollectiveAttachTest, IndexAndReaderAttachTheSame) {
  const std::string path = TempTracePath("attach.ugt");
  ASSERT_TRUE(WriteTraceFromText(kAttach, "attach", path).ok());
  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok());
  ASSERT_FALSE(back->damage.has_value()) << back->damage->message;
  std::vector<OpRecord> read;
  for (TraceRecord& record : back->records) {
    if (record.type == RecordType::kOp) read.push_back(record.op);
    if (record.type == RecordType::kCollective) {
      AttachCollective(record.collective.info, &read[record.collective.op_seq]);
    }
  }
  auto index = TraceIndex::Open(path);
  ASSERT_TRUE(index.ok());
  ASSERT_TRUE((*index)->IndexAll().ok());
  ASSERT_EQ((*index)->steps().size(), 1u);
  EXPECT_EQ((*index)->steps()[0].collectives, 2u);
  std::vector<OpRecord> ops(5);  // reused records: stale collectives must go
  ops[2].collective = read[0].collective;
  ASSERT_FALSE((*index)->ReadStep(0, &ops).has_value());
  ASSERT_EQ(ops.size(), read.size());
  for (size_t op_idx = 0; op_idx < ops.size(); ++op_idx) {
    EXPECT_EQ(OpToText(ops[op_idx], (*index)->strings()),
              OpToText(read[op_idx], (*index)->strings()));
    ASSERT_EQ(ops[op_idx].collective == nullptr, read[op_idx].collective == nullptr);
  }
  ASSERT_NE(ops[0].collective, nullptr);
  EXPECT_EQ(ops[0].collective->seq, 3u);
  ASSERT_EQ(ops[0].outputs.size(), 1u);
  EXPECT_EQ(ops[0].outputs[0].kind, ArgKind::kTensor);
  EXPECT_EQ(ops[0].outputs[0].digest, DigestBytes("sum", 3));
  ASSERT_NE(ops[1].collective, nullptr);
  EXPECT_FALSE(ops[1].collective->completed);
  EXPECT_EQ(ops[1].outputs[0].kind, ArgKind::kAlias);
  EXPECT_EQ(ops[2].collective, nullptr);
  EXPECT_FALSE(ops[2].inputs[0].stats_shared);
  EXPECT_EQ(ops[2].inputs[0].stats.max, 2);

  const std::vector<RawCollective> raw = (*index)->RawCollectives(0);
  ASSERT_EQ(raw.size(), 2u);
  EXPECT_EQ(raw[0].op_index, 0u);
  EXPECT_EQ(raw[1].op_index, 1u);
}

TEST(CollectiveTextTest, ErrorsNameTheLine) {
  const struct {
    const char* text;
    const char* message;
  } cases[] = {
      {"collective\n", "t:1: 'collective' must follow an 'op' line"},
      {"op name=a\ncollective\n  in none\n", "t:3: a collective has outputs only"},
      {"op name=a\ncollective ranks=0,1\n", "t:2: bad ranks"},
      {"op name=a\ncollective ranks=[0,]\n", "t:2: bad ranks"},
      {"op name=a\ncollective completed=yes\n", "t:2: bad completed"},
      {"op name=a\ncollective color=red\n", "t:2: unknown collective field 'color'"},
      {"op name=a\ncollective op=3\n", "t.ugt: cannot write collective: op_seq 3"},
  };
  for (const auto& c : cases) {
    const Status status = WriteTraceFromText(c.text, "t", TempTracePath("t.ugt"));
    EXPECT_FALSE(status.ok()) << c.text;
    EXPECT_TRUE(Contains(status.message(), c.message)) << status.message();
  }
}

}  // namespace
}  // namespace upguard
