#include "trace/text_format.h"

#include <gtest/gtest.h>

#include "trace/text_syntax.h"
#include "trace/trace_test_util.h"

namespace upguard {
namespace {

using testing::TempTracePath;

std::string ToText(const std::string& path) {
  auto text = TraceToText(path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

Status FromText(const std::string& text, const std::string& path) {
  return WriteTraceFromText(text, "test.txt", path);
}

TEST(TraceTextTest, PrintsTheCanonicalForm) {
  const std::string path = TempTracePath("a.ugt");
  const std::string input = R"(# a comment line
meta {"rank": 0, "argv": ["train.py"]}
op name=aten::gelu module=blocks.1.mlp.act site=model.py:87 phase=forward  # trailing comment
  in self tensor float32[4,64] digest=@a stats=min:-1,max:2,mean:0.1,l2:3.5,nan:1
  in approximate scalar 'none'
  out tensor float32[4,64] digest=0123456789abcdefFEDCBA9876543210
stepend 0
op name=aten::mul
  in tensor float32[] digest=@b
  in 'tensor' none
stepend 1
end
)";
  ASSERT_TRUE(FromText(input, path).ok());
  const std::string a = DigestBytes("a", 1).Hex();
  const std::string b = DigestBytes("b", 1).Hex();
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  TraceRecord record;
  auto more = (*reader)->Next(&record);
  ASSERT_TRUE(more.ok() && *more);
  const Digest128 step0 = [&] {
    while (*(*reader)->Next(&record) && record.type != RecordType::kStepEnd) {
    }
    return record.step_end.digest;
  }();
  const std::string expected =
      "meta {\"rank\":0,\"argv\":[\"train.py\"]}\n"
      "op step=0 phase=forward depth=0 name=aten::gelu module=blocks.1.mlp.act site=model.py:87\n"
      "  in self tensor float32[4,64] digest=" +
      a +
      " stats=min:-1,max:2,mean:0.1,l2:3.5,finite:0,nan:1,pinf:0,ninf:0\n"
      "  in approximate scalar 'none'\n"
      "  out tensor float32[4,64] digest=0123456789abcdeffedcba9876543210\n"
      "stepend 0  # ops=1 digest=" +
      step0.Hex() +
      "\n"
      "op step=1 phase=other depth=0 name=aten::mul\n"
      "  in tensor float32[] digest=" +
      b +
      "\n"
      "  in 'tensor' none\n";
  const std::string printed = ToText(path);
  EXPECT_EQ(printed.substr(0, expected.size()), expected) << printed;
  EXPECT_EQ(printed.substr(printed.size() - 4), "end\n");
}

TEST(TraceTextTest, TextBinaryTextBinaryIsStable) {
  const std::string first = TempTracePath("first.ugt");
  const std::string second = TempTracePath("second.ugt");
  testing::WriteSampleTrace(first);
  const std::string text = ToText(first);
  ASSERT_TRUE(FromText(text, second).ok());
  EXPECT_EQ(ToText(second), text);
  EXPECT_EQ(testing::ReadBytes(second), testing::ReadBytes(first));
}

TEST(TraceTextTest, LabelsGiveEqualDigestsForEqualLabels) {
  const std::string path = TempTracePath("labels.ugt");
  ASSERT_TRUE(FromText("op name=f\n in tensor int8[1] digest=@x\n out tensor int8[1] digest=@x\n"
                       " out tensor int8[1] digest=@y\n",
                       path)
                  .ok());
  auto back = testing::ReadAll(path);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->records.size(), 1u);
  const OpRecord& op = back->records[0].op;
  EXPECT_EQ(op.inputs[0].digest, op.outputs[0].digest);
  EXPECT_NE(op.outputs[0].digest, op.outputs[1].digest);
  EXPECT_EQ(op.inputs[0].digest, DigestBytes("x", 1));
  EXPECT_FALSE(back->complete) << "no 'end' line: no End record";
  EXPECT_EQ(back->meta_json, "{}");
}

TEST(TraceTextTest, LabelsRoundTrip) {
  const std::string first = TempTracePath("first.ugt");
  const std::string second = TempTracePath("second.ugt");
  const std::string text = R"(op step=0 phase=optimizer depth=0 name=aten::_foreach_mul_
  in self tensor float32[4] digest=@v label='exp_avg_sq of fc.weight'
  in other scalar '0.999' label=beta2
  in 'label=x' none label=fc.bias
  in alias float32[4] label='it\'s #1'
  out uninit float32[4] label=fc.weight.grad
  out opaque float32[4]
)";
  ASSERT_TRUE(FromText(text, first).ok());
  const std::string printed = ToText(first);
  const std::string v = DigestBytes("v", 1).Hex();
  EXPECT_EQ(printed, R"(meta {}
op step=0 phase=optimizer depth=0 name=aten::_foreach_mul_
  in self tensor float32[4] digest=)" +
                         v +
                         R"( label='exp_avg_sq of fc.weight'
  in other scalar '0.999' label=beta2
  in label=x none label=fc.bias
  in alias float32[4] label='it\'s #1'
  out uninit float32[4] label=fc.weight.grad
  out opaque float32[4]
)");
  ASSERT_TRUE(FromText(printed, second).ok());
  EXPECT_EQ(testing::ReadBytes(second), testing::ReadBytes(first));
  auto back = testing::ReadAll(first);
  ASSERT_TRUE(back.ok());
  const OpRecord& op = back->records[0].op;
  EXPECT_NE(op.inputs[0].label, kEmptyString);
  EXPECT_EQ(op.outputs[1].label, kEmptyString);
}

// Version 4's phase: text -> binary -> text -> binary gives the same bytes, and the reader
// sees phase recompute with the module whose forward ran again.
TEST(TraceTextTest, RecomputePhaseRoundTrip) {
  const std::string first = TempTracePath("recompute_first.ugt");
  const std::string second = TempTracePath("recompute_second.ugt");
  const std::string text = R"(op step=0 phase=forward name=aten::gelu module=blocks.1.mlp.act
  in self tensor float32[4] digest=@h
  out tensor float32[4] digest=@g
op step=0 phase=recompute name=aten::gelu module=blocks.1.mlp.act site=model.py:83
  in self tensor float32[4] digest=@h
  out tensor float32[4] digest=@g
stepend 0
)";
  ASSERT_TRUE(FromText(text, first).ok());
  const std::string printed = ToText(first);
  EXPECT_NE(printed.find("op step=0 phase=recompute depth=0 name=aten::gelu "
                         "module=blocks.1.mlp.act site=model.py:83\n"),
            std::string::npos)
      << printed;
  ASSERT_TRUE(FromText(printed, second).ok());
  EXPECT_EQ(testing::ReadBytes(second), testing::ReadBytes(first));
  auto back = testing::ReadAll(first);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->records[0].op.phase, Phase::kForward);
  EXPECT_EQ(back->records[1].op.phase, Phase::kRecompute);
  auto reader = TraceReader::Open(first);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->version(), kTraceVersion);  // phase 5 came with version 4
}

// A fingerprint step's StepEnd carries its flag (an appended field, trace.md §5.4); a step
// without it has the bytes a StepEnd always had.
TEST(TraceTextTest, FingerprintStepRoundTrip) {
  const std::string first = TempTracePath("fingerprint_first.ugt");
  const std::string second = TempTracePath("fingerprint_second.ugt");
  const std::string text = R"(op step=0 name=upguard::loss
  in loss tensor float32[] digest=@l
stepend 0 fingerprint
op step=1 name=aten::mul
  in tensor float32[] digest=@b
stepend 1
)";
  ASSERT_TRUE(FromText(text, first).ok());
  const std::string printed = ToText(first);
  EXPECT_NE(printed.find("stepend 0 fingerprint  # ops=1"), std::string::npos) << printed;
  EXPECT_NE(printed.find("stepend 1  # ops=1"), std::string::npos) << printed;
  ASSERT_TRUE(FromText(printed, second).ok());
  EXPECT_EQ(testing::ReadBytes(second), testing::ReadBytes(first));
  auto back = testing::ReadAll(first);
  ASSERT_TRUE(back.ok());
  std::vector<uint64_t> flags;
  for (const TraceRecord& record : back->records) {
    if (record.type == RecordType::kStepEnd) flags.push_back(record.step_end.flags);
  }
  EXPECT_EQ(flags, (std::vector<uint64_t>{kStepFingerprint, 0}));
  EXPECT_FALSE(FromText("stepend 0 fingerprint extra\n", TempTracePath("bad.ugt")).ok());
}

TEST(TraceTextTest, AwkwardStringsRoundTrip) {
  const std::string path = TempTracePath("quotes.ugt");
  const std::string again = TempTracePath("again.ugt");
  auto writer = TraceWriter::Create(path, "{}");
  ASSERT_TRUE(writer.ok());
  OpRecord op;
  op.op = (*writer)->Intern("my op with spaces");
  op.module = (*writer)->Intern("#not a comment");
  op.call_site = (*writer)->Intern("it's \"quoted\" \\ back\tslash\nnew\x01line=x");
  ArgRecord scalar;
  scalar.kind = ArgKind::kScalar;
  scalar.name = (*writer)->Intern("none");  // a kind word as a name
  scalar.text = (*writer)->Intern("");
  op.inputs.push_back(scalar);
  scalar.name = (*writer)->Intern("ünïcode");
  scalar.text = (*writer)->Intern("[1, 2, 3]");
  op.inputs.push_back(scalar);
  ASSERT_TRUE((*writer)->WriteOp(op).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  const std::string text = ToText(path);
  const Status status = FromText(text, again);
  ASSERT_TRUE(status.ok()) << status.ToString() << "\n" << text;
  EXPECT_EQ(ToText(again), text);
  EXPECT_EQ(testing::ReadBytes(again), testing::ReadBytes(path)) << text;
}

TEST(TraceTextTest, ErrorsNameTheLine) {
  const std::string path = TempTracePath("errors.ugt");
  const struct {
    const char* text;
    const char* message;
  } cases[] = {
      {"op name=f\n in tensor flaot32[2] digest=@a\n", "test.txt:2: want DTYPE[DIMS]"},
      {"op name=f\n in tensor float32[2]\n", "test.txt:2: a tensor needs digest="},
      {"op name=f\n in tensor float32[2] digest=abc\n", "test.txt:2: bad digest 'abc'"},
      {"\n\n in none\n", "test.txt:3: 'in' must follow an 'op' line"},
      {"op name=f colour=red\n", "test.txt:1: unknown op field 'colour'"},
      {"op step=1\n", "test.txt:1: op needs name="},
      {"op name=f phase=sideways\n", "test.txt:1: unknown phase 'sideways'"},
      {"end\nop name=f\n", "test.txt:2: nothing may follow 'end'"},
      {"op name=f\nmeta {}\n", "test.txt:2: 'meta' must be the first line"},
      {"meta [1]\n", "test.txt:1: 'meta' wants a JSON object"},
      {"op name='unterminated\n", "test.txt:1: unterminated ' quote"},
      {"frobnicate\n", "test.txt:1: unknown line 'frobnicate'"},
      {"op name=f\n in x tensor float32[2] digest=@a stats=min:1,oops:2\n",
       "test.txt:2: bad stats item 'oops:2'"},
      {"op name=f\n in scalar\n", "test.txt:2: want 'scalar TEXT'"},
      {"op name=f\n in none extra\n", "test.txt:2: unexpected 'extra'"},
      {"op name=f\n in x tensor float32[2] digest=@a labels=y\n",
       "test.txt:2: unexpected 'labels=y' (a tensor takes digest=, stats= and label=)"},
      {"op name=f\n in scalar '1' name=y\n", "test.txt:2: unexpected 'name=y' (scalar takes"},
      {"op name=f\n in none label=''\n", "test.txt:2: an empty label= is no label"},
      {"op name=c10d::broadcast_\ncollective\n out tensor int64[2] digest=@b label=x\n",
       "test.txt:3: a collective's outputs take no label="},
  };
  for (const auto& c : cases) {
    const Status status = FromText(c.text, path);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_EQ(status.message().rfind(c.message, 0), 0u) << status.message();
  }
}

TEST(TraceTextTest, DamagedTracePrintsItsPrefixAndTheDamage) {
  const std::string path = TempTracePath("damaged.ugt");
  testing::WriteSampleTrace(path);
  const std::string bytes = testing::ReadBytes(path);
  testing::WriteBytes(path, bytes.substr(0, bytes.size() - 2));
  std::optional<TraceDamage> damage;
  auto text = TraceToText(path, &damage);
  ASSERT_TRUE(text.ok());
  ASSERT_TRUE(damage.has_value());
  EXPECT_NE(text->find("# damage: " + path + ": truncated record at byte"), std::string::npos)
      << *text;
  EXPECT_EQ(text->find("\nend\n"), std::string::npos);
}

TEST(TraceTextTest, SyntaxHelpers) {
  std::vector<text::TextToken> tokens;
  std::string error;
  ASSERT_TRUE(text::TokenizeLine("a b='c d'e \"x=y\" #rest", &tokens, &error));
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens[1].key(), "b");
  EXPECT_EQ(tokens[1].value(), "c de");
  EXPECT_FALSE(tokens[2].is_key_value());
  EXPECT_EQ(tokens[2].text, "x=y");
  EXPECT_FALSE(text::TokenizeLine("'\\q'", &tokens, &error));
  EXPECT_FALSE(text::TokenizeLine("'\\x4'", &tokens, &error));
  EXPECT_EQ(text::Quote("plain"), "plain");
  EXPECT_EQ(text::Quote(""), "''");
  EXPECT_EQ(text::Quote("a'b\x7f"), "'a\\'b\\x7f'");
  for (double value : {0.1, -0.0, 1e300, 5e-324, 1.0 / 3}) {
    double back;
    ASSERT_TRUE(text::ParseDouble(text::DoubleText(value), &back));
    EXPECT_EQ(back, value);
  }
  DType dtype;
  std::vector<int64_t> shape;
  EXPECT_TRUE(text::ParseShapeText("bfloat16[1,2,3]", &dtype, &shape));
  EXPECT_EQ(dtype, DType::kBFloat16);
  EXPECT_EQ(shape, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(text::ParseShapeText("float32[1,]", &dtype, &shape));
  EXPECT_FALSE(text::ParseShapeText("float32[-1]", &dtype, &shape));
  EXPECT_FALSE(text::ParseShapeText("float32", &dtype, &shape));
}

}  // namespace
}  // namespace upguard
