// op_payload.h, the one reader of the Op layout, against DecodeOp (which walks it with
// ReportErrors): the checking-only walk fails exactly where DecodeOp does, the prefix reader
// agrees with the full decode, and the views point at what DecodeOp decodes.
#include "trace/op_payload.h"

#include <gtest/gtest.h>

#include <random>

#include "trace/shared_stats.h"

namespace upguard {
namespace {

class RandomOps {
 public:
  explicit RandomOps(uint32_t seed) : rng_(seed) {
    for (const char* s : {"aten::mm", "self", "other", "1", "fc", "model.py:3", "fc.weight"}) {
      strings_.Intern(s);
    }
  }

  const StringTable& strings() const { return strings_; }

  // An op of every kind, dtype and flag, with labels on some arguments; statistics shared with
  // an earlier op of the step where they may be.
  std::string Next(uint64_t seq) {
    OpRecord op;
    op.step = Pick(2) == 0 ? 70000 : Pick(3);
    op.phase = static_cast<Phase>(Pick(static_cast<uint32_t>(kMaxPhase) + 1));
    op.depth = Pick(2) == 0 ? 300 : Pick(3);
    op.op = Id();
    op.module = Id();
    op.node = Id();
    for (auto* args : {&op.inputs, &op.outputs}) {
      args->resize(Pick(4));
      for (ArgRecord& arg : *args) {
        arg.kind = static_cast<ArgKind>(1 + Pick(6));
        arg.name = Id();
        arg.label = Pick(2) == 0 ? kEmptyString : 1 + Pick(6);
        if (arg.kind == ArgKind::kScalar) arg.text = Id();
        if (arg.kind == ArgKind::kScalar || arg.kind == ArgKind::kNone) continue;
        arg.dtype = static_cast<DType>(Pick(kMaxDType + 1));
        arg.shape.resize(Pick(4));
        for (int64_t& dim : arg.shape) dim = Pick(2) == 0 ? Pick(4) : Pick(100000);
        arg.digest = Digest128{Pick(3), Pick(3)};
        arg.has_stats = arg.kind == ArgKind::kTensor && Pick(2) == 0;
        arg.stats.l2 = 0.5 * Pick(5);
        arg.stats.finite_count = Pick(1u << 30);
      }
    }
    std::string payload;
    shared_.Enter(op.step);
    EXPECT_TRUE(EncodeOp(op, seq, strings_, &payload, &shared_).ok());
    return payload;
  }

  // Damage of every kind: a byte changed, the payload cut or extended.
  std::string Damage(std::string payload) {
    switch (Pick(3)) {
      case 0:
        payload[Pick(static_cast<uint32_t>(payload.size()))] ^= static_cast<char>(1 + Pick(255));
        break;
      case 1:
        payload.resize(Pick(static_cast<uint32_t>(payload.size())));
        break;
      default:
        payload.insert(Pick(static_cast<uint32_t>(payload.size())), "\xff\xff\xff\xff\x10");
    }
    return payload;
  }

  uint32_t Pick(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_); }

 private:
  StringId Id() { return Pick(static_cast<uint32_t>(strings_.size())); }

  std::mt19937 rng_;
  StringTable strings_;
  SharedStats shared_;
};

// Reads everything, keeps nothing.
struct CheckVisitor {
  bool Header(const OpHeader&) { return true; }
  bool Count(ArgSide, uint64_t) { return true; }
  ArgTarget Target(ArgSide, uint64_t) { return ArgTarget{}; }
  bool Arg(ArgSide, uint64_t, const ArgView&) { return true; }
  bool ArgsEnd(const char*) { return true; }
  bool Label(uint64_t, StringId) { return true; }
};

TEST(OpPayloadTest, CheckingOnlyFailsExactlyWhereDecodeOpFails) {
  RandomOps ops(5);
  int damaged = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const std::string payload = trial % 4 == 0 ? ops.Next(trial) : ops.Damage(ops.Next(trial));
    const size_t id_limit = ops.strings().size() - ops.Pick(2);
    OpRecord op;
    RecordError error;
    const bool decoded = DecodeOp(payload, ops.strings(), id_limit, &op, &error);
    PayloadCursor<CheckOnly> in(payload, CheckOnly{}, id_limit);
    CheckVisitor visitor;
    EXPECT_EQ(WalkOp(in, visitor), decoded) << "trial " << trial << ": " << error.detail;

    uint64_t seq = 0, fast_seq = 0;
    uint32_t step = 0, fast_step = 0;
    RecordError prefix_error;
    PayloadCursor<CheckOnly> prefix(payload, CheckOnly{});
    const bool prefix_read = DecodeOpPrefix(payload, &seq, &step, &prefix_error);
    EXPECT_EQ(ReadOpPrefix(prefix, &fast_seq, &fast_step), prefix_read);
    if (decoded) {
      EXPECT_TRUE(prefix_read);
      EXPECT_EQ(seq, op.seq);
      EXPECT_EQ(step, op.step);
    }
    damaged += !decoded;
  }
  EXPECT_GT(damaged, 10000);
}

// Collects what the views say, to set beside DecodeOp's record.
struct ViewVisitor {
  OpHeader header;
  std::vector<ArgRecord> args;
  const char* last_end = nullptr;
  std::vector<std::pair<uint64_t, StringId>> labels;

  bool Header(const OpHeader& h) {
    header = h;
    last_end = h.end;
    return true;
  }
  bool Count(ArgSide, uint64_t) { return true; }
  ArgTarget Target(ArgSide, uint64_t) { return ArgTarget{}; }
  bool Arg(ArgSide, uint64_t, const ArgView& view) {
    EXPECT_LT(last_end, view.name_at);  // the count or the kind byte lies between
    EXPECT_LT(view.name_at, view.body);
    EXPECT_LE(view.body, view.end);
    last_end = view.end;
    ArgRecord& arg = args.emplace_back();
    arg.kind = view.kind;
    arg.name = view.name;
    arg.dtype = view.dtype;
    arg.text = view.text;
    for (const char* p = view.dims; p != view.dims_end;) {
      uint64_t dim = 0;
      EXPECT_TRUE(DecodeVarint(&p, view.dims_end, &dim));
      arg.shape.push_back(static_cast<int64_t>(dim));
    }
    EXPECT_EQ(arg.shape.size(), view.ndim);
    if (view.digest != nullptr) arg.digest = LoadDigest(view.digest);
    arg.has_stats = (view.flags & kArgFlagHasStats) != 0;
    arg.stats_shared = (view.flags & kArgFlagStatsShared) != 0;
    return true;
  }
  bool ArgsEnd(const char* pos) { return pos >= last_end; }
  bool Label(uint64_t slot, StringId label) {
    labels.emplace_back(slot, label);
    return true;
  }
};

TEST(OpPayloadTest, ViewsPointAtWhatDecodeOpDecodes) {
  RandomOps ops(9);
  for (int trial = 0; trial < 2000; ++trial) {
    const std::string payload = ops.Next(1000 + trial);
    OpRecord op;
    RecordError error;
    ASSERT_TRUE(DecodeOp(payload, ops.strings(), &op, &error)) << error.detail;
    PayloadCursor<CheckOnly> in(payload, CheckOnly{}, ops.strings().size());
    ViewVisitor views;
    ASSERT_TRUE(WalkOp(in, views));
    EXPECT_EQ(views.header.seq, op.seq);
    EXPECT_EQ(views.header.phase, op.phase);
    EXPECT_EQ(views.header.depth, op.depth);
    EXPECT_EQ(views.header.op, op.op);
    EXPECT_EQ(views.header.node, op.node);
    char step[kMaxVarintBytes];
    EXPECT_EQ(views.header.body, AfterOpSeq(payload).data() + EncodeVarint(op.step, step));
    EXPECT_LT(views.header.body, views.header.ids);
    std::vector<std::pair<uint64_t, StringId>> labels;
    size_t slot = 0;
    for (const auto* args : {&op.inputs, &op.outputs}) {
      for (const ArgRecord& arg : *args) {
        const ArgRecord& view = views.args[slot];
        EXPECT_EQ(view.kind, arg.kind);
        EXPECT_EQ(view.name, arg.name);
        EXPECT_EQ(view.dtype, arg.dtype);
        EXPECT_EQ(view.shape, arg.shape);
        EXPECT_EQ(view.text, arg.text);
        if (arg.kind == ArgKind::kTensor) {
          EXPECT_EQ(view.digest, arg.digest);
        }
        EXPECT_EQ(view.has_stats, arg.has_stats);
        EXPECT_EQ(view.stats_shared, arg.stats_shared);
        if (arg.label != kEmptyString) labels.emplace_back(slot, arg.label);
        ++slot;
      }
    }
    EXPECT_EQ(views.args.size(), slot);
    EXPECT_EQ(views.labels, labels);
  }
}

TEST(OpPayloadTest, AfterOpSeqSkipsAVarintOfAnyLength) {
  EXPECT_EQ(AfterOpSeq(std::string("\x05\x01\x02", 3)), "\x01\x02");
  EXPECT_EQ(AfterOpSeq(std::string("\x85\x81\x01\x07", 4)), "\x07");
  EXPECT_EQ(AfterOpSeq(std::string("\x85\x81", 2)), "");  // cut: nothing after
  EXPECT_EQ(AfterOpSeq(""), "");
}

}  // namespace
}  // namespace upguard
