// RawComparer against the reference route: decode both payloads and compare them as the walk
// does. "Equal" must never be claimed for ops the walk would tell apart, nor for a payload
// DecodeOp rejects (unless the two payloads are the same bytes after the seq, the documented
// unparsed case); and equal ops must be found equal whatever ids each table gave their strings.
#include "diff/raw_compare.h"

#include <gtest/gtest.h>

#include <random>

#include "diff/compare.h"
#include "trace/record_codec.h"
#include "trace/trace_test_util.h"

namespace upguard {
namespace {

const char* const kStrings[] = {"aten::mm",   "aten::add",   "aten::gelu", "self",   "other",
                                "alpha",      "1",           "0.5",        "'tanh'", "fc",
                                "model.py:3", "MmBackward0", "weight",     "[2, 3]", ""};

// Two tables holding the same strings under different ids.
struct Tables {
  StringTable a, b;
  Tables() {
    b.Intern("only in b");
    for (const char* s : kStrings) a.Intern(s);
    for (size_t idx = std::size(kStrings); idx-- > 0;) b.Intern(kStrings[idx]);
    a.Intern("only in a");
  }
};

StringId Id(const StringTable& table, std::string_view s) {
  StringId id = 0;
  EXPECT_TRUE(table.Find(s, &id)) << s;
  return id;
}

class OpMaker {
 public:
  explicit OpMaker(uint32_t seed) : rng_(seed) {}

  // A random op, its string fields as text (ids are set per table by Encode).
  struct Op {
    OpRecord record;
    std::vector<std::string> texts;  // op, module, site, node, then per arg: name, text, label
  };

  Op Random() {
    Op op;
    op.record.phase = static_cast<Phase>(Pick(5));
    op.record.depth = Pick(3);
    op.record.step = Pick(1000);
    for (int field = 0; field < 4; ++field) op.texts.push_back(kStrings[Pick(std::size(kStrings))]);
    for (auto* args : {&op.record.inputs, &op.record.outputs}) {
      args->resize(Pick(4));
      for (ArgRecord& arg : *args) {
        arg.kind = static_cast<ArgKind>(1 + Pick(6));
        if (arg.kind != ArgKind::kScalar && arg.kind != ArgKind::kNone) {
          arg.dtype = static_cast<DType>(1 + Pick(kMaxDType));
          arg.shape.resize(Pick(4));
          for (int64_t& dim : arg.shape) dim = Pick(2) == 0 ? Pick(4) : Pick(300);
        }
        if (arg.kind == ArgKind::kTensor) {
          arg.digest = Digest128{Pick(3), Pick(3)};
          arg.has_stats = Pick(2) == 0;
          arg.stats.l2 = Pick(5);
          arg.stats.finite_count = Pick(200);
        }
        op.texts.push_back(kStrings[Pick(std::size(kStrings))]);                      // name
        op.texts.push_back(kStrings[Pick(std::size(kStrings))]);                      // scalar text
        op.texts.push_back(Pick(2) == 0 ? "" : kStrings[Pick(std::size(kStrings))]);  // label
      }
    }
    return op;
  }

  uint32_t Pick(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_); }

 private:
  std::mt19937 rng_;
};

std::string Encode(const OpMaker::Op& op, const StringTable& table, uint64_t seq) {
  OpRecord record = op.record;
  size_t text_idx = 0;
  for (StringId* field : {&record.op, &record.module, &record.call_site, &record.node}) {
    *field = Id(table, op.texts[text_idx++]);
  }
  for (auto* args : {&record.inputs, &record.outputs}) {
    for (ArgRecord& arg : *args) {
      arg.name = Id(table, op.texts[text_idx++]);
      const StringId text = Id(table, op.texts[text_idx++]);
      if (arg.kind == ArgKind::kScalar) arg.text = text;
      arg.label = Id(table, op.texts[text_idx++]);
    }
  }
  std::string payload;
  const Status status = EncodeOp(record, seq, table, &payload);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return payload;
}

// The walk's view: both decode, the same name, every slot ArgsEqual.
bool WalkEqual(std::string_view pa, const Tables& t, std::string_view pb, bool* both_decode) {
  OpRecord a, b;
  RecordError error;
  *both_decode = DecodeOp(pa, t.a, &a, &error) && DecodeOp(pb, t.b, &b, &error);
  return *both_decode && t.a.Get(a.op) == t.b.Get(b.op) && SameArgs(a, b);
}

std::string_view AfterSeq(std::string_view payload) {
  size_t len = 0;
  while (len < payload.size() && (static_cast<uint8_t>(payload[len]) & 0x80) != 0) ++len;
  return payload.substr(std::min(len + 1, payload.size()));
}

TEST(RawComparerTest, AgreesWithDecodingOnRandomOps) {
  Tables t;
  RawComparer comparer(t.a, t.b);
  comparer.Sync();
  const uint32_t ids_a = static_cast<uint32_t>(t.a.size());
  const uint32_t ids_b = static_cast<uint32_t>(t.b.size());
  OpMaker maker(7);
  int equal = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const OpMaker::Op op = maker.Random();
    // Half the pairs are the same op (maybe with the fields the walk ignores changed).
    OpMaker::Op other = maker.Pick(2) == 0 ? op : maker.Random();
    if (maker.Pick(2) == 0) {
      other.record.depth = maker.Pick(5);
      other.record.phase = static_cast<Phase>(maker.Pick(5));
      other.texts[1] = kStrings[maker.Pick(std::size(kStrings))];  // module
      for (size_t label_idx = 6; label_idx < other.texts.size(); label_idx += 3) {
        other.texts[label_idx] = kStrings[maker.Pick(std::size(kStrings))];
      }
      for (ArgRecord& arg : other.record.outputs) arg.has_stats = !arg.has_stats;
    }
    const std::string pa = Encode(op, t.a, trial);
    const std::string pb = Encode(other, t.b, trial + maker.Pick(3));
    bool both_decode = false;
    const bool expected = WalkEqual(pa, t, pb, &both_decode);
    ASSERT_TRUE(both_decode);
    EXPECT_EQ(comparer.Equal(pa, ids_a, pb, ids_b), expected) << "trial " << trial;
    equal += expected;
  }
  EXPECT_GT(equal, 5000);
}

TEST(RawComparerTest, NeverEqualForWhatDecodingRejectsOrTellsApart) {
  Tables t;
  RawComparer comparer(t.a, t.b);
  comparer.Sync();
  OpMaker maker(11);
  int rejected = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const OpMaker::Op op = maker.Random();
    const std::string pa = Encode(op, t.a, trial);
    std::string pb = Encode(op, t.b, trial);
    for (uint32_t flips = 1 + maker.Pick(3); flips > 0; --flips) {
      pb[maker.Pick(static_cast<uint32_t>(pb.size()))] ^= static_cast<char>(1 + maker.Pick(255));
    }
    if (maker.Pick(4) == 0) pb.resize(maker.Pick(static_cast<uint32_t>(pb.size())));
    // Limits below the table sizes: an id defined later is undefined here.
    const uint32_t ids_a = static_cast<uint32_t>(t.a.size()) - maker.Pick(2);
    const uint32_t ids_b = static_cast<uint32_t>(t.b.size()) - maker.Pick(2);
    if (!comparer.Equal(pa, ids_a, pb, ids_b)) continue;
    if (AfterSeq(pa) == AfterSeq(pb)) continue;  // unparsed by design
    OpRecord a, b;
    RecordError error;
    ASSERT_TRUE(DecodeOp(pa, t.a, ids_a, &a, &error)) << "trial " << trial << ": " << error.reason;
    ASSERT_TRUE(DecodeOp(pb, t.b, ids_b, &b, &error)) << "trial " << trial << ": " << error.reason;
    bool both_decode = false;
    EXPECT_TRUE(WalkEqual(pa, t, pb, &both_decode)) << "trial " << trial;
    ++rejected;
  }
  EXPECT_GT(rejected, 100);  // some flips land in fields the walk ignores
}

TEST(RawComparerTest, ByteIdenticalOpsNeedTheSameStringsBehindTheirIds) {
  StringTable a, b;
  for (const char* s : {"aten::mm", "x"}) a.Intern(s);
  for (const char* s : {"aten::mm", "y"}) b.Intern(s);  // id 2 names different strings
  RawComparer comparer(a, b);
  comparer.Sync();
  OpRecord op;
  op.op = 1;
  op.inputs.resize(1);
  op.inputs[0].kind = ArgKind::kScalar;
  op.inputs[0].text = 2;
  std::string pa, pb;
  ASSERT_TRUE(EncodeOp(op, 0, a, &pa).ok());
  ASSERT_TRUE(EncodeOp(op, 5, b, &pb).ok());
  EXPECT_EQ(AfterSeq(pa), AfterSeq(pb));
  EXPECT_FALSE(comparer.Equal(pa, 3, pb, 3));  // 'x' vs 'y'
  op.inputs[0].text = 1;
  pa.clear();
  pb.clear();
  ASSERT_TRUE(EncodeOp(op, 0, a, &pa).ok());
  ASSERT_TRUE(EncodeOp(op, 5, b, &pb).ok());
  EXPECT_TRUE(comparer.Equal(pa, 2, pb, 2));  // only ids 0 and 1 can be used here
}

TEST(RawComparerTest, FollowsTablesThatGrow) {
  StringTable a, b;
  RawComparer comparer(a, b);
  b.Intern("late");  // B defines it first
  comparer.Sync();
  a.Intern("other");
  a.Intern("late");
  comparer.Sync();
  OpRecord op_a, op_b;
  op_a.op = 2;
  op_b.op = 1;
  std::string pa, pb;
  ASSERT_TRUE(EncodeOp(op_a, 0, a, &pa).ok());
  ASSERT_TRUE(EncodeOp(op_b, 0, b, &pb).ok());
  EXPECT_TRUE(comparer.Equal(pa, 3, pb, 2));
}

// A step of four ops whose second is a collective, its record after the third; `module` shifts
// every later string id, `collective` and `outputs` are the record's line and its "out" lines.
std::string CollectiveStep(const std::string& module, const std::string& collective,
                           const std::string& outputs) {
  return "op name=aten::mul" + module +
         "\n  out tensor float32[4] digest=@g\n"
         "op name=c10d::allreduce_\n  in t tensor float32[4] digest=@g\n  out alias float32[4]\n"
         "op name=aten::add\n  in x scalar 1\n" +
         collective + "\n" + outputs +
         "op name=aten::relu\n  in x tensor float32[4] digest=@g\nstepend 0\n";
}

std::unique_ptr<TraceIndex> IndexOf(const std::string& text, const std::string& name) {
  const std::string path = testing::TempTracePath(name);
  const Status status = WriteTraceFromText(text, name, path);
  EXPECT_TRUE(status.ok()) << status.ToString();
  StatusOr<std::unique_ptr<TraceIndex>> index = TraceIndex::Open(path);
  EXPECT_TRUE(index.ok() && (*index)->IndexAll().ok());
  return std::move(*index);
}

// A collective's values are in its Collective record, not its Op record: the equal prefix stops
// at the first op whose records differ in what the walk sees, or that has one in one step only.
TEST(RawComparerTest, StopsAtTheFirstOpWhoseCollectivesDiffer) {
  const std::string line = "collective op=1 group=dp ranks=[0,1] group_size=2 seq=5";
  const std::string sum = "  out tensor float32[4] digest=@sum stats=min:1\n";
  const std::unique_ptr<TraceIndex> a = IndexOf(CollectiveStep("", line, sum), "a.ugt");
  const struct {
    std::string b;
    uint64_t equal;
  } cases[] = {
      {CollectiveStep("", line, sum), 4},
      // Timing, argument names, statistics and string ids are not compared.
      {CollectiveStep(" module=m", line + " ops_before_completion=3",
                      "  out o tensor float32[4] digest=@sum\n"),
       4},
      {CollectiveStep("", line, "  out tensor float32[4] digest=@other\n"), 1},
      {CollectiveStep("", line, "  out tensor float64[4] digest=@sum\n"), 1},
      {CollectiveStep("", line, sum + sum), 1},
      {CollectiveStep("", line + " completed=0", ""), 1},
      {CollectiveStep("", "collective op=1 group=tp ranks=[0,1] group_size=2 seq=5", sum), 1},
      {CollectiveStep("", "collective op=1 group=dp ranks=[1,0] group_size=2 seq=5", sum), 1},
      {CollectiveStep("", "collective op=1 group=dp ranks=[0,1] group_size=2 seq=6", sum), 1},
      {CollectiveStep("", "", ""), 1},                           // none in B
      {CollectiveStep("", line, sum + "collective op=2\n"), 2},  // one more in B
      {CollectiveStep("", "collective op=0\n" + line, sum), 0},  // B's first op has one
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.b);
    const std::unique_ptr<TraceIndex> b = IndexOf(c.b, "b.ugt");
    RawComparer comparer(a->strings(), b->strings());
    EXPECT_EQ(comparer.EqualPrefix(*a, 0, *b, 0), c.equal);
    RawComparer reversed(b->strings(), a->strings());
    EXPECT_EQ(reversed.EqualPrefix(*b, 0, *a, 0), c.equal);
  }
}

}  // namespace
}  // namespace upguard
