// Written == read back: every record type, arg kind and phase through TraceWriter/TraceReader.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trace/record_codec.h"
#include "trace/step_digest.h"
#include "trace/trace_test_util.h"

namespace upguard {
namespace {

using testing::ReadAll;
using testing::TempTracePath;

void ExpectSameArg(const ArgRecord& a, const ArgRecord& b, const std::string& where) {
  EXPECT_EQ(a.kind, b.kind) << where;
  EXPECT_EQ(a.name, b.name) << where;
  EXPECT_EQ(a.dtype, b.dtype) << where;
  EXPECT_EQ(a.shape, b.shape) << where;
  EXPECT_EQ(a.digest, b.digest) << where;
  EXPECT_EQ(a.has_stats, b.has_stats) << where;
  EXPECT_EQ(a.stats.min, b.stats.min) << where;
  EXPECT_EQ(a.stats.max, b.stats.max) << where;
  EXPECT_EQ(a.stats.mean, b.stats.mean) << where;
  EXPECT_EQ(a.stats.l2, b.stats.l2) << where;
  EXPECT_EQ(a.stats.finite_count, b.stats.finite_count) << where;
  EXPECT_EQ(a.stats.nan_count, b.stats.nan_count) << where;
  EXPECT_EQ(a.stats.pos_inf_count, b.stats.pos_inf_count) << where;
  EXPECT_EQ(a.stats.neg_inf_count, b.stats.neg_inf_count) << where;
  EXPECT_EQ(a.text, b.text) << where;
}

void ExpectSameOp(const OpRecord& a, const OpRecord& b) {
  EXPECT_EQ(a.seq, b.seq);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.phase, b.phase);
  EXPECT_EQ(a.depth, b.depth);
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.module, b.module);
  EXPECT_EQ(a.call_site, b.call_site);
  EXPECT_EQ(a.node, b.node);
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t arg_idx = 0; arg_idx < a.inputs.size(); ++arg_idx) {
    ExpectSameArg(a.inputs[arg_idx], b.inputs[arg_idx], "input " + std::to_string(arg_idx));
  }
  for (size_t arg_idx = 0; arg_idx < a.outputs.size(); ++arg_idx) {
    ExpectSameArg(a.outputs[arg_idx], b.outputs[arg_idx], "output " + std::to_string(arg_idx));
  }
}

ArgRecord Tensor(StringId name, DType dtype, std::vector<int64_t> shape, uint64_t seed,
                 bool stats) {
  ArgRecord arg;
  arg.kind = ArgKind::kTensor;
  arg.name = name;
  arg.dtype = dtype;
  arg.shape = std::move(shape);
  arg.digest = Digest128{seed * 0x9E3779B97F4A7C15ull, ~seed};
  arg.has_stats = stats;
  if (stats) {
    arg.stats = TensorStats{-1.5, 1e300, 0.1, 3.25, uint64_t{1} << 40, 3, 2, 1};
  }
  return arg;
}

ArgRecord ShapeOnly(ArgKind kind, DType dtype, std::vector<int64_t> shape) {
  ArgRecord arg;
  arg.kind = kind;
  arg.dtype = dtype;
  arg.shape = std::move(shape);
  return arg;
}

TEST(TraceRoundTripTest, EveryArgKindPhaseAndStatsReadsBackEqual) {
  const std::string path = TempTracePath("all.ugt");
  const std::string meta = R"({"rank":3,"world_size":4,"argv":["train.py","--lr","0.1"]})";
  auto writer_or = TraceWriter::Create(path, meta);
  ASSERT_TRUE(writer_or.ok()) << writer_or.status().ToString();
  TraceWriter& writer = **writer_or;

  std::vector<OpRecord> written;
  StepDigester digester;
  StringTable strings;  // mirrors the writer's ids
  auto intern = [&](std::string_view s) {
    const StringId id = writer.Intern(s);
    EXPECT_EQ(strings.Intern(s), id);
    return id;
  };
  for (uint8_t phase = 0; phase <= static_cast<uint8_t>(kMaxPhase); ++phase) {
    OpRecord op;
    op.step = 7;
    op.phase = static_cast<Phase>(phase);
    op.depth = phase;
    op.op = intern("aten::op" + std::to_string(phase));
    op.module = phase == 0 ? kEmptyString : intern("blocks.1.mlp");
    op.call_site = intern("model.py:87");
    op.node = phase == 2 ? intern("GeluBackward0") : kEmptyString;
    op.inputs.push_back(Tensor(intern("self"), DType::kFloat32, {4, 64}, phase + 1, true));
    op.inputs.push_back(Tensor(intern("other"), DType::kInt64, {}, phase + 10, false));
    ArgRecord scalar;
    scalar.kind = ArgKind::kScalar;
    scalar.name = intern("alpha");
    scalar.text = intern("0.5");
    scalar.digest = DigestBytes("0.5", 3);  // what the reader reconstructs
    op.inputs.push_back(scalar);
    ArgRecord none;
    none.kind = ArgKind::kNone;
    op.inputs.push_back(none);
    op.outputs.push_back(ShapeOnly(ArgKind::kAlias, DType::kBFloat16, {64, 4}));
    op.outputs.push_back(ShapeOnly(ArgKind::kUninit, DType::kComplex128, {0}));
    op.outputs.push_back(ShapeOnly(ArgKind::kOpaque, DType::kInvalid, {1}));
    // Big shape: 64 dims, some over 2^32.
    std::vector<int64_t> big(64, 1);
    big[0] = int64_t{1} << 40;
    big[63] = std::numeric_limits<int64_t>::max();
    op.outputs.push_back(Tensor(kEmptyString, DType::kFloat16, big, phase + 20, true));
    op.seq = written.size();
    ASSERT_TRUE(writer.WriteOp(op).ok());
    digester.AddOp(op, strings);
    written.push_back(op);
  }
  ASSERT_TRUE(writer.EndStep(7).ok());
  EXPECT_EQ(writer.ops_written(), 6u);  // other ... recompute (version 4)
  ASSERT_TRUE(writer.Close().ok());
  ASSERT_TRUE(writer.Close().ok());  // idempotent

  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->meta_json, meta);
  EXPECT_TRUE(back->complete);
  EXPECT_FALSE(back->damage.has_value());
  ASSERT_EQ(back->records.size(), written.size() + 1);
  for (size_t op_idx = 0; op_idx < written.size(); ++op_idx) {
    ASSERT_EQ(back->records[op_idx].type, RecordType::kOp);
    ExpectSameOp(back->records[op_idx].op, written[op_idx]);
  }
  const StepEndRecord& step_end = back->records.back().step_end;
  EXPECT_EQ(back->records.back().type, RecordType::kStepEnd);
  EXPECT_EQ(step_end.step, 7u);
  EXPECT_EQ(step_end.op_count, 6u);
  EXPECT_EQ(step_end.digest, digester.Finish());
  EXPECT_EQ(back->records[5].op.phase, Phase::kRecompute);
  EXPECT_EQ(PhaseName(Phase::kRecompute), "recompute");
}

TEST(TraceRoundTripTest, ManyStringsKeepTheirIds) {
  const std::string path = TempTracePath("strings.ugt");
  auto writer = TraceWriter::Create(path, "{}");
  ASSERT_TRUE(writer.ok());
  std::vector<StringId> ids;
  for (int string_idx = 0; string_idx < 20000; ++string_idx) {
    ids.push_back((*writer)->Intern("module." + std::to_string(string_idx)));
    EXPECT_EQ(ids.back(), static_cast<StringId>(string_idx + 1));
  }
  EXPECT_EQ((*writer)->Intern("module.5"), ids[5]);
  EXPECT_EQ((*writer)->Intern(""), kEmptyString);
  OpRecord op;
  op.op = ids.back();
  op.module = ids[12345];
  ASSERT_TRUE((*writer)->WriteOp(op).ok());
  ASSERT_TRUE((*writer)->Close().ok());

  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  TraceRecord record;
  auto more = (*reader)->Next(&record);
  ASSERT_TRUE(more.ok() && *more);
  EXPECT_EQ((*reader)->strings().size(), 20001u);
  EXPECT_EQ((*reader)->strings().Get(record.op.op), "module.19999");
  EXPECT_EQ((*reader)->strings().Get(record.op.module), "module.12345");
  more = (*reader)->Next(&record);
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
  EXPECT_TRUE((*reader)->complete());
}

TEST(TraceRoundTripTest, WriterRejectsBadOps) {
  const std::string path = TempTracePath("bad.ugt");
  auto writer = TraceWriter::Create(path, "{}");
  ASSERT_TRUE(writer.ok());
  OpRecord op;
  op.op = 42;  // never interned
  EXPECT_EQ((*writer)->WriteOp(op).code(), StatusCode::kInvalidArgument);
  op.op = (*writer)->Intern("aten::view");
  op.outputs.push_back(ShapeOnly(ArgKind::kAlias, DType::kFloat32, {2, -1}));
  const Status negative = (*writer)->WriteOp(op);
  EXPECT_EQ(negative.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(negative.message().find("negative dim -1"), std::string::npos) << negative.message();
  op.outputs.clear();
  ASSERT_TRUE((*writer)->WriteOp(op).ok());
  EXPECT_EQ((*writer)->ops_written(), 1u);  // rejected ops take no seq

  EXPECT_EQ(TraceWriter::Create(path, "[1,2]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(TraceWriter::Create(path, "{oops").status().code(), StatusCode::kInvalidArgument);
}

TEST(TraceRoundTripTest, UnknownRecordTypesWithValidFramesAreSkipped) {
  const std::string path = TempTracePath("future.ugt");
  testing::WriteSampleTrace(path);
  const auto clean = ReadAll(path);
  ASSERT_TRUE(clean.ok());
  std::string bytes = testing::ReadBytes(path);
  const auto spans = testing::FrameSpans(bytes);
  std::string future;
  BeginFrame(&future);
  future += "a record type from a later minor version";
  FinishFrame(static_cast<RecordType>(200), &future);
  bytes.insert(spans[3].start, future);  // among the first records
  testing::WriteBytes(path, bytes);
  const auto back = ReadAll(path);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->damage.has_value()) << back->damage->message;
  EXPECT_TRUE(back->complete);
  EXPECT_EQ(back->texts, clean->texts);
}

TEST(TraceRoundTripTest, MetaIsTheFirstRecordAndParses) {
  const std::string path = TempTracePath("meta.ugt");
  testing::WriteSampleTrace(path);
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->version(), 6);
  EXPECT_EQ((*reader)->path(), path);
  EXPECT_GT((*reader)->file_size(), kFileHeaderBytes);
  const auto meta = nlohmann::json::parse((*reader)->meta_json());
  EXPECT_EQ(meta["world_size"], 1);
  EXPECT_EQ(meta["argv"][0], "train.py");
}

// The example bytes of trace.md §3.2.
TEST(TraceFormatTest, DocumentedExampleBytes) {
  std::string frame;
  BeginFrame(&frame);
  EncodeEnd(3, &frame);
  FinishFrame(RecordType::kEnd, &frame);
  EXPECT_EQ(frame, std::string("\x01\x00\x00\x00\x05\x00\x00\x00\x03\x03\x9c\xdf\x84", 13));
  EXPECT_EQ(EncodeFileHeader(MakeFileHeader()),
            std::string("UPGTRACE\x06\x00\x00\x00\x00\x00\x00\x00", 16));
  const FileHeader header = DecodeFileHeader("UPGTRACE\x07\x00\x02\x00\x01\x00\x00\x00");
  EXPECT_EQ(header.version, 7);
  EXPECT_EQ(header.flags, 2);
  EXPECT_EQ(header.reserved, 1u);
  Digest128 digest{0x0011223344556677ull, 0x8899aabbccddeeffull};
  std::string canonical;
  AppendDigest(digest, &canonical);
  EXPECT_EQ(canonical,
            std::string("\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff", 16));
  EXPECT_EQ(LoadDigest(canonical.data()), digest);
}

}  // namespace
}  // namespace upguard
