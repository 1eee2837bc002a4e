// Damaged, truncated and foreign files: the reader never crashes, keeps every record fully
// before the damage, and names the offset and the reason.
#include <gtest/gtest.h>

#include <random>

#include "trace/record_codec.h"
#include "trace/trace_test_util.h"
#include "trace/varint.h"

namespace upguard {
namespace {

using testing::FrameSpans;
using testing::ReadAll;
using testing::ReadBytes;
using testing::TempTracePath;
using testing::WriteBytes;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class TraceDamageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TempTracePath("sample.ugt");
    testing::WriteSampleTrace(path_);
    bytes_ = ReadBytes(path_);
    spans_ = FrameSpans(bytes_);
    auto clean = ReadAll(path_);
    ASSERT_TRUE(clean.ok()) << clean.status().ToString();
    clean_ = *clean;
    ASSERT_TRUE(clean_.complete);
    ASSERT_FALSE(clean_.damage.has_value());
    ASSERT_EQ(spans_.back().end, bytes_.size());
  }

  // The clean records whose frames end at or before `cut`.
  std::vector<std::string> TextsBefore(uint64_t cut) const {
    std::vector<std::string> texts;
    for (size_t record_idx = 0; record_idx < clean_.records.size(); ++record_idx) {
      for (const auto& span : spans_) {
        if (span.start == clean_.records[record_idx].offset && span.end <= cut) {
          texts.push_back(clean_.texts[record_idx]);
        }
      }
    }
    return texts;
  }

  std::string path_;
  std::string bytes_;
  std::vector<testing::FrameSpan> spans_;
  testing::ReadBack clean_;
};

TEST_F(TraceDamageTest, TruncationAtEveryByteKeepsTheCompleteRecords) {
  const std::string cut_path = TempTracePath("cut.ugt");
  for (uint64_t cut = 0; cut <= bytes_.size(); ++cut) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut));
    WriteBytes(cut_path, bytes_.substr(0, cut));
    auto back = ReadAll(cut_path);
    if (cut < kFileHeaderBytes) {
      ASSERT_FALSE(back.ok());
      EXPECT_EQ(back.status().code(), StatusCode::kDataLoss);
      EXPECT_TRUE(Contains(back.status().message(), cut == 0 ? "empty file" : "truncated header"))
          << back.status().message();
      continue;
    }
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->texts, TextsBefore(cut));
    EXPECT_EQ(back->complete, cut == bytes_.size());
    const testing::FrameSpan* inside = nullptr;
    for (const auto& span : spans_) {
      if (span.start < cut && cut < span.end) inside = &span;
    }
    if (cut == kFileHeaderBytes) {
      ASSERT_TRUE(back->damage.has_value());
      EXPECT_EQ(back->damage->offset, kFileHeaderBytes);
      EXPECT_TRUE(Contains(back->damage->message, "missing RunMeta record"));
    } else if (inside == nullptr) {
      EXPECT_FALSE(back->damage.has_value()) << back->damage->message;
    } else {
      ASSERT_TRUE(back->damage.has_value());
      EXPECT_EQ(back->damage->offset, inside->start);
      EXPECT_TRUE(Contains(back->damage->message, cut_path + ": truncated record at byte " +
                                                      std::to_string(inside->start)))
          << back->damage->message;
      EXPECT_TRUE(Contains(back->damage->message, "probably killed")) << back->damage->message;
    }
  }
}

TEST_F(TraceDamageTest, EveryFlippedByteIsReportedAtItsRecord) {
  const std::string flip_path = TempTracePath("flip.ugt");
  for (const auto& span : spans_) {
    for (uint64_t pos = span.start; pos < span.end; ++pos) {
      SCOPED_TRACE("flip at byte " + std::to_string(pos) + " of the frame at " +
                   std::to_string(span.start));
      std::string damaged = bytes_;
      damaged[pos] = static_cast<char>(damaged[pos] ^ 0x40);
      WriteBytes(flip_path, damaged);
      auto back = ReadAll(flip_path);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      ASSERT_TRUE(back->damage.has_value());
      EXPECT_EQ(back->damage->offset, span.start) << back->damage->message;
      EXPECT_EQ(back->texts, TextsBefore(span.start));
      EXPECT_FALSE(back->complete);
      if (pos >= span.start + 4) {  // a damaged length may also read as a truncation
        EXPECT_TRUE(
            Contains(back->damage->message, "bad CRC at byte " + std::to_string(span.start)))
            << back->damage->message;
      }
    }
  }
}

TEST_F(TraceDamageTest, HeaderDamage) {
  const std::string damaged_path = TempTracePath("header.ugt");
  std::string damaged = bytes_;
  damaged[0] = 'X';
  WriteBytes(damaged_path, damaged);
  auto open = TraceReader::Open(damaged_path);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(open.status().message(),
            damaged_path +
                ": not an upguard trace (bad magic at byte 0); pass a run directory "
                "written by 'upguard record'");

  damaged = bytes_;
  StoreLe16(7, &damaged[8]);
  WriteBytes(damaged_path, damaged);
  open = TraceReader::Open(damaged_path);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(open.status().message(),
                       "trace format version 7 is not supported (this "
                       "upguard reads versions 1 to 6); upgrade"))
      << open.status().message();

  damaged = bytes_;
  damaged[10] = 1;
  WriteBytes(damaged_path, damaged);
  open = TraceReader::Open(damaged_path);
  ASSERT_FALSE(open.ok());
  EXPECT_TRUE(Contains(open.status().message(), "unsupported header flags"));

  damaged = bytes_;
  damaged[13] = 7;  // reserved: ignored
  WriteBytes(damaged_path, damaged);
  auto back = ReadAll(damaged_path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->texts, clean_.texts);
}

TEST(TraceOpenTest, ForeignEmptyMissingAndDirectory) {
  const std::string path = TempTracePath("foreign.txt");
  WriteBytes(path, "hello, this is a text file and not a trace\n");
  auto open = TraceReader::Open(path);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(open.status().message(), "not an upguard trace (bad magic at byte 0)"));

  WriteBytes(path, "UPG");  // a short file that could be a truncated header
  EXPECT_EQ(TraceReader::Open(path).status().code(), StatusCode::kDataLoss);
  WriteBytes(path, "UPX");
  EXPECT_EQ(TraceReader::Open(path).status().code(), StatusCode::kInvalidArgument);

  WriteBytes(path, "");
  open = TraceReader::Open(path);
  EXPECT_EQ(open.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(Contains(open.status().message(), "empty file (0 bytes)"));

  EXPECT_EQ(TraceReader::Open(path + ".missing").status().code(), StatusCode::kNotFound);
  const std::string dir = TempTracePath("dir");
  ASSERT_TRUE(MakeDirectories(dir).ok());
  open = TraceReader::Open(dir);
  EXPECT_EQ(open.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(open.status().message(), "is a directory"));
}

// Appends a frame of `type` with `payload` before the End record (or at the end).
std::string WithFrame(const std::string& bytes, const std::vector<testing::FrameSpan>& spans,
                      RecordType type, const std::string& payload, bool before_end = true) {
  std::string out = bytes;
  out.insert(before_end ? spans.back().start : out.size(), testing::Frame(type, payload));
  return out;
}

TEST_F(TraceDamageTest, ValidFramesWithBadContents) {
  const std::string path = TempTracePath("contents.ugt");
  std::string op_payload;
  for (uint64_t field : {uint64_t{5}, uint64_t{2}}) AppendVarint(field, &op_payload);  // seq, step
  op_payload.push_back(0);                                                             // phase
  for (uint64_t field : {0, 99, 0, 0, 0, 0}) AppendVarint(field, &op_payload);         // op id 99
  const struct {
    RecordType type;
    std::string payload;
    std::string reason;
  } cases[] = {
      {RecordType::kOp, op_payload, "undefined string id 99 at byte"},
      {RecordType::kOp, op_payload.substr(0, 3), "malformed Op record at byte"},
      {RecordType::kString, std::string("\x01", 1) + "again", "malformed String record"},
      {RecordType::kRunMeta, "{}", "unexpected RunMeta record"},
      {RecordType::kStepEnd, "\x01\x01", "malformed StepEnd record"},
      {RecordType::kEnd, "\x09", "malformed End record"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.reason);
    WriteBytes(path, WithFrame(bytes_, spans_, c.type, c.payload));
    auto back = ReadAll(path);
    ASSERT_TRUE(back.ok());
    ASSERT_TRUE(back->damage.has_value());
    EXPECT_EQ(back->damage->offset, spans_.back().start);
    EXPECT_TRUE(Contains(back->damage->message, c.reason)) << back->damage->message;
    EXPECT_EQ(back->texts, clean_.texts);  // everything before the bad record
  }
}

// Phase 5 (recompute) is the last one version 4 defines; 6 is from a newer upguard.
TEST_F(TraceDamageTest, PhaseAfterRecomputeIsDamage) {
  const std::string path = TempTracePath("phase.ugt");
  std::string op_payload;
  for (uint64_t field : {uint64_t{8}, uint64_t{2}}) AppendVarint(field, &op_payload);  // seq, step
  op_payload.push_back(static_cast<char>(static_cast<uint8_t>(kMaxPhase) + 1));
  for (uint64_t field : {0, 1, 0, 0, 0, 0, 0}) AppendVarint(field, &op_payload);
  WriteBytes(path, WithFrame(bytes_, spans_, RecordType::kOp, op_payload));
  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok() && back->damage.has_value());
  EXPECT_TRUE(Contains(back->damage->message, "malformed Op record")) << back->damage->message;
  EXPECT_EQ(back->texts, clean_.texts);
  EXPECT_EQ(kMaxPhase, Phase::kRecompute);
}

TEST_F(TraceDamageTest, OpWithWrongSeqIsDamage) {
  const std::string path = TempTracePath("seq.ugt");
  std::string op_payload;
  for (uint64_t field : {0, 0, 0, 0, 1, 0, 0, 0, 0, 0}) AppendVarint(field, &op_payload);
  WriteBytes(path, WithFrame(bytes_, spans_, RecordType::kOp, op_payload));
  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok() && back->damage.has_value());
  EXPECT_TRUE(Contains(back->damage->message, "seq 0, expected 8")) << back->damage->message;
}

TEST_F(TraceDamageTest, DataAfterEndIsDamage) {
  const std::string path = TempTracePath("after_end.ugt");
  WriteBytes(path, bytes_ + "x");
  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok() && back->damage.has_value());
  EXPECT_TRUE(back->complete);
  EXPECT_EQ(back->damage->offset, bytes_.size());
  EXPECT_TRUE(Contains(back->damage->message, "unexpected data after the End record"));
  EXPECT_EQ(back->texts, clean_.texts);
}

TEST_F(TraceDamageTest, BadLength) {
  const std::string path = TempTracePath("length.ugt");
  std::string damaged = bytes_.substr(0, spans_.back().start) + std::string(12, '\xF0');
  WriteBytes(path, damaged);
  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok() && back->damage.has_value());
  EXPECT_TRUE(Contains(back->damage->message, "bad record length 4042322160 at byte " +
                                                  std::to_string(spans_.back().start)))
      << back->damage->message;
}

TEST_F(TraceDamageTest, CleanEndWithoutEndRecordIsIncompleteNotDamaged) {
  const std::string path = TempTracePath("no_end.ugt");
  WriteBytes(path, bytes_.substr(0, spans_.back().start));
  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->damage.has_value());
  EXPECT_FALSE(back->complete);
  EXPECT_EQ(back->texts, clean_.texts);

  // The same through the writer: destroyed without Close.
  {
    auto writer = TraceWriter::Create(path, "{}");
    ASSERT_TRUE(writer.ok());
    OpRecord op;
    op.op = (*writer)->Intern("aten::relu");
    ASSERT_TRUE((*writer)->WriteOp(op).ok());
  }
  back = ReadAll(path);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->damage.has_value());
  EXPECT_FALSE(back->complete);
  EXPECT_EQ(back->records.size(), 1u);
}

TEST_F(TraceDamageTest, DamageMessageCountsReadableRecords) {
  const std::string path = TempTracePath("count.ugt");
  WriteBytes(path, bytes_.substr(0, spans_.back().end - 1));
  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok() && back->damage.has_value());
  EXPECT_TRUE(Contains(back->damage->message, " — the " + std::to_string(spans_.size() - 1) +
                                                  " records before it (8 ops) "
                                                  "are readable"))
      << back->damage->message;
}

TEST_F(TraceDamageTest, RandomCorruptionNeverCrashes) {
  const std::string path = TempTracePath("random.ugt");
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string damaged = bytes_;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int flip = 0; flip < flips; ++flip) {
      const size_t pos = kFileHeaderBytes + rng() % (damaged.size() - kFileHeaderBytes);
      damaged[pos] = static_cast<char>(rng());
    }
    damaged.resize(kFileHeaderBytes + rng() % (damaged.size() - kFileHeaderBytes + 1));
    WriteBytes(path, damaged);
    auto back = ReadAll(path);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    const std::vector<std::string> expected =
        TextsBefore(back->damage ? back->damage->offset : damaged.size());
    // Records before the damage are the clean ones (a flip inside them would be the damage).
    EXPECT_EQ(back->texts, expected) << trial;
  }
}

}  // namespace
}  // namespace upguard
