// Safetensors files: written == read back for every dtype and layout, the exact bytes of a
// tiny file (docs/formats/capture.md §6), and every malformation an error naming path and byte.
#include "capture/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "base/file.h"
#include "capture/header_json.h"
#include "digest/digest_test_util.h"

namespace upguard {
namespace {

using testing::ContiguousStrides;
using testing::LogicalBytes;
using testing::OwnedView;

std::string TempPath(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("upguard_safetensors_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string ReadBytes(const std::string& path) { return *ReadFileToString(path); }

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A file from a header text (unpadded) and a byte buffer, for hand-made malformations.
std::string FileBytes(const std::string& header, const std::string& buffer) {
  std::string bytes(8, '\0');
  for (int byte_idx = 0; byte_idx < 8; ++byte_idx) {
    bytes[byte_idx] = static_cast<char>(uint64_t{header.size()} >> (8 * byte_idx));
  }
  return bytes + header + buffer;
}

std::string BufferBytes(const StoredTensor& tensor) { return std::string(tensor.bytes); }

std::string ViewBytes(const OwnedView& view) {
  const std::vector<uint8_t> bytes = LogicalBytes(view);
  return std::string(bytes.begin(), bytes.end());
}

// Storage whose every byte differs from its neighbours.
std::vector<uint8_t> PatternBytes(size_t size, uint8_t seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t byte_idx = 0; byte_idx < size; ++byte_idx) {
    bytes[byte_idx] = static_cast<uint8_t>(byte_idx * 37 + seed);
  }
  return bytes;
}

TEST(SafetensorsTest, GoldenBytesOfATinyFile) {
  const std::string path = TempPath("golden.safetensors");
  const float values[] = {1.0f, 2.0f};
  OwnedView x{DType::kFloat32, {2}, {1}, values};
  ASSERT_TRUE(WriteSafetensors(path, {{"x", x.view()}}, {{"a", "b"}}).ok());
  // Spelled out in docs/formats/capture.md §6.
  const std::string expected =
      std::string("\x50\0\0\0\0\0\0\0", 8) +
      "{\"__metadata__\":{\"a\":\"b\"},\"x\":{\"dtype\":\"F32\",\"shape\":[2],"
      "\"data_offsets\":[0,8]}} " +
      std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);
  EXPECT_EQ(ReadBytes(path), expected);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ((*file)->tensors().size(), 1u);
  const StoredTensor& tensor = (*file)->tensors()[0];
  EXPECT_EQ(tensor.name, "x");
  EXPECT_EQ(tensor.dtype, DType::kFloat32);
  EXPECT_EQ(tensor.shape, std::vector<int64_t>{2});
  EXPECT_EQ(BufferBytes(tensor), std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8));
  EXPECT_EQ((*file)->metadata(), (std::vector<std::pair<std::string, std::string>>{{"a", "b"}}));
}

TEST(SafetensorsTest, EveryDTypeIsReadBackAsWritten) {
  const std::vector<DType> dtypes = {DType::kFloat32,  DType::kFloat64,   DType::kFloat16,
                                     DType::kBFloat16, DType::kInt8,      DType::kUInt8,
                                     DType::kInt16,    DType::kInt32,     DType::kInt64,
                                     DType::kBool,     DType::kComplex64, DType::kComplex128};
  const std::vector<uint8_t> storage = PatternBytes(16 * 6, 5);
  std::vector<SafetensorsInput> inputs;
  std::vector<OwnedView> views;
  views.reserve(dtypes.size());
  for (const DType dtype : dtypes) {
    views.push_back({dtype, {2, 3}, {3, 1}, storage.data()});
    inputs.push_back({"t_" + std::string(DTypeName(dtype)), views.back().view()});
  }
  const std::string path = TempPath("dtypes.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, inputs, {}).ok());
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ((*file)->tensors().size(), dtypes.size());
  for (size_t tensor_idx = 0; tensor_idx < dtypes.size(); ++tensor_idx) {
    const StoredTensor& tensor = (*file)->tensors()[tensor_idx];
    EXPECT_EQ(tensor.name, inputs[tensor_idx].name);
    EXPECT_EQ(tensor.dtype, dtypes[tensor_idx]) << tensor.name;
    EXPECT_EQ(tensor.shape, (std::vector<int64_t>{2, 3})) << tensor.name;
    EXPECT_EQ(BufferBytes(tensor), ViewBytes(views[tensor_idx])) << tensor.name;
    EXPECT_EQ((*file)->Find(tensor.name), &tensor);
    // The stored tensor has the digest the trace would record for the view (capture.md §4).
    OwnedView stored{tensor.dtype, tensor.shape, ContiguousStrides(tensor.shape),
                     tensor.bytes.data()};
    EXPECT_EQ(DigestTensor(stored.view(), {})->digest,
              DigestTensor(views[tensor_idx].view(), {})->digest)
        << tensor.name;
  }
  EXPECT_EQ((*file)->Find("missing"), nullptr);
  // The complex tensors are marked in the file, and the marks are not user metadata.
  const std::string bytes = ReadBytes(path);
  EXPECT_NE(bytes.find("\"t_complex64\":{\"dtype\":\"F32\",\"shape\":[2,3,2]"), std::string::npos);
  EXPECT_NE(bytes.find("\"upguard.complex.t_complex128\":\"1\""), std::string::npos);
  EXPECT_TRUE((*file)->metadata().empty());
}

TEST(SafetensorsTest, ScalarsEmptyTensorsAndStridedViewsAreWrittenRowMajor) {
  std::vector<float> storage(300 * 200);
  std::iota(storage.begin(), storage.end(), 0.0f);
  const std::vector<OwnedView> views = {
      {DType::kFloat32, {}, {}, storage.data() + 7},            // 0-d
      {DType::kFloat32, {3, 0, 2}, {0, 2, 1}, storage.data()},  // empty
      {DType::kFloat32, {0}, {1}, nullptr},                     // empty, no data
      {DType::kFloat32, {3, 2}, {1, 3}, storage.data()},        // transposed
      {DType::kFloat32, {200, 300}, {1, 200}, storage.data()},  // > 64 KiB gathered
      {DType::kFloat32, {2, 3}, {0, 1}, storage.data() + 4},    // broadcast
      {DType::kFloat32, {4}, {1}, storage.data()},              // contiguous
  };
  std::vector<SafetensorsInput> inputs;
  for (size_t view_idx = 0; view_idx < views.size(); ++view_idx) {
    inputs.push_back({"v" + std::to_string(view_idx), views[view_idx].view()});
  }
  const std::string path = TempPath("layouts.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, inputs, {}).ok());
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ((*file)->tensors().size(), views.size());
  for (size_t view_idx = 0; view_idx < views.size(); ++view_idx) {
    const StoredTensor& tensor = (*file)->tensors()[view_idx];
    EXPECT_EQ(tensor.shape, views[view_idx].sizes) << view_idx;
    EXPECT_EQ(BufferBytes(tensor), ViewBytes(views[view_idx])) << view_idx;
  }
  EXPECT_EQ((*file)->tensors()[0].bytes.size(), 4u);
  EXPECT_EQ((*file)->tensors()[1].bytes.size(), 0u);
}

TEST(SafetensorsTest, MetadataRoundTripsWithEscapesAndUnicode) {
  const std::vector<std::pair<std::string, std::string>> metadata = {
      {"upguard.op", "aten::mm"},
      {"quote\"back\\slash", "tab\tnewline\ncontrol\x01"},
      {"unicode", "\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80"},
      {"empty", ""},
  };
  const int32_t value = 42;
  OwnedView scalar{DType::kInt32, {}, {}, &value};
  const std::string path = TempPath("metadata.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, {{"na\"me\xc3\xa9", scalar.view()}}, metadata).ok());
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->metadata(), metadata);
  EXPECT_EQ((*file)->tensors()[0].name, "na\"me\xc3\xa9");
  EXPECT_NE(ReadBytes(path).find("\"tab\\tnewline\\ncontrol\\u0001\""), std::string::npos);
}

TEST(SafetensorsTest, TheByteBufferStartsEightByteAligned) {
  const double value = 1.5;
  OwnedView scalar{DType::kFloat64, {}, {}, &value};
  for (size_t name_length = 1; name_length <= 9; ++name_length) {
    const std::string path = TempPath("aligned.safetensors");
    ASSERT_TRUE(WriteSafetensors(path, {{std::string(name_length, 'n'), scalar.view()}}, {}).ok());
    const std::string bytes = ReadBytes(path);
    uint64_t header_size = 0;
    std::memcpy(&header_size, bytes.data(), 8);
    EXPECT_EQ((8 + header_size) % 8, 0u) << name_length;
    EXPECT_EQ(bytes.size(), 8 + header_size + 8);
    const std::string header = bytes.substr(8, header_size);
    const size_t close = header.rfind('}');
    EXPECT_EQ(header.substr(close + 1), std::string(header_size - close - 1, ' '));
    EXPECT_LT(header_size - close - 1, 8u);
  }
}

TEST(SafetensorsTest, WriterRejectsNamesAndViewsItCannotStore) {
  const float values[] = {1, 2, 3, 4};
  OwnedView ok{DType::kFloat32, {4}, {1}, values};
  OwnedView negative{DType::kFloat32, {2, 2}, {-2, 1}, values + 2};
  OwnedView null_data{DType::kFloat32, {4}, {1}, nullptr};
  OwnedView bad_dtype{DType::kInvalid, {4}, {1}, values};
  const std::string path = TempPath("rejected.safetensors");
  struct Case {
    std::vector<SafetensorsInput> inputs;
    std::vector<std::pair<std::string, std::string>> metadata;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{{"a", ok.view()}, {"a", ok.view()}},
       {},
       "WriteSafetensors: tensor \"a\" appears twice; tensor names must be unique"},
      {{{"", ok.view()}},
       {},
       "WriteSafetensors: tensor \"\" has a name safetensors cannot store; use a non-empty "
       "UTF-8 name other than __metadata__"},
      {{{"__metadata__", ok.view()}},
       {},
       "WriteSafetensors: tensor \"__metadata__\" has a name safetensors cannot store; use a "
       "non-empty UTF-8 name other than __metadata__"},
      {{{"\xff", ok.view()}},
       {},
       "WriteSafetensors: tensor \"\xff\" has a name safetensors cannot store; use a non-empty "
       "UTF-8 name other than __metadata__"},
      {{{"n", negative.view()}},
       {},
       "WriteSafetensors: tensor \"n\": stride of dim 0 is -2; negative strides are not "
       "supported (copy the tensor first)"},
      {{{"n", null_data.view()}},
       {},
       "WriteSafetensors: tensor \"n\": data is null for a tensor with 4 elements"},
      {{{"n", bad_dtype.view()}},
       {},
       "WriteSafetensors: tensor \"n\": dtype code 0 is not a valid DType; set "
       "TensorView::dtype"},
      {{{"a", ok.view()}},
       {{"upguard.complex.a", "1"}},
       "WriteSafetensors: metadata key \"upguard.complex.a\" is reserved for marking complex "
       "tensors; rename it"},
      {{{"a", ok.view()}},
       {{"k", "1"}, {"k", "2"}},
       "WriteSafetensors: metadata key \"k\" appears twice"},
      {{{"a", ok.view()}},
       {{"k", "\xc0\x80"}},
       "WriteSafetensors: metadata key \"k\" or its value is not UTF-8"},
  };
  for (const Case& c : cases) {
    const Status status = WriteSafetensors(path, c.inputs, c.metadata);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(status.message(), c.message);
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  }
}

TEST(SafetensorsTest, UnwritableDirectoryIsAnIoErrorNamingThePath) {
  const float value = 1;
  OwnedView scalar{DType::kFloat32, {}, {}, &value};
  const Status status =
      WriteSafetensors("/nonexistent/upguard/a.safetensors", {{"x", scalar.view()}}, {});
  EXPECT_EQ(status.code(), StatusCode::kIo);
  EXPECT_NE(status.message().find("/nonexistent/upguard/a.safetensors.tmp"), std::string::npos);
}

// Hand-made headers, each broken in one way: the exact message, offset included.
TEST(SafetensorsTest, MalformedFilesGiveThePathTheByteAndAHint) {
  const std::string path = TempPath("bad.safetensors");
  const std::string layout_hint =
      "; the header does not describe the data (docs/formats/capture.md §5); the file is damaged";
  const std::string syntax_hint =
      "; the header is not safetensors JSON (docs/formats/capture.md §3); the file is damaged "
      "or was not written as safetensors";
  const std::string eight(8, 'b');
  auto entry = [](const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
           ",\"data_offsets\":" + offsets + "}";
  };
  struct Case {
    std::string bytes;
    std::string message;  // after "<path>: "
  };
  const std::vector<Case> cases = {
      {"12345",
       "the file has 5 bytes, fewer than 8 at byte 0; a safetensors file starts with an 8-byte "
       "header length; it is truncated or not safetensors"},
      {FileBytes("{}", "").substr(0, 8) + "{",
       "header length 2 exceeds the 1 bytes after it at byte 0; the file is truncated or not "
       "safetensors"},
      {std::string("\0\0\0\0\0\0\x40\0", 8) + "{}",
       "header length 18014398509481984 exceeds the 2 bytes after it at byte 0; the file is "
       "truncated or not safetensors"},
      {FileBytes(" {}", ""),
       "the header does not start with '{' at byte 8; the file is damaged or not safetensors"},
      {FileBytes("{\"x\" {}}", ""), "expected ':', found '{' at byte 13" + syntax_hint},
      {FileBytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]", eight),
       "expected '}', found the end of the header at byte 60" + syntax_hint},
      {FileBytes("{" + entry("x", "F8_E4M3", "[8]", "[0,8]") + "}", eight),
       "tensor \"x\" has dtype \"F8_E4M3\" at byte 22; upguard reads F64, F32, F16, BF16, I64, "
       "I32, I16, I8, U8 and BOOL"},
      {FileBytes("{" + entry("x", "F32", "[3]", "[0,8]") + "}", eight),
       "tensor \"x\" has data_offsets [0, 8) (8 bytes) but its dtype and shape need 12 at byte 55" +
           layout_hint},
      {FileBytes("{" + entry("x", "F32", "[2]", "[0,9]") + "}", eight),
       "tensor \"x\" has data_offsets [0, 9) outside the 8-byte buffer at byte 55" + layout_hint},
      {FileBytes("{" + entry("x", "F32", "[2]", "[8,0]") + "}", eight),
       "tensor \"x\" has data_offsets [8, 0) outside the 8-byte buffer at byte 55" + layout_hint},
      {FileBytes(
           "{" + entry("x", "F32", "[1]", "[0,4]") + "," + entry("y", "F32", "[1]", "[2,6]") + "}",
           eight),
       "tensor \"y\" starts at 2 but tensor \"x\" ends at 4 (overlap) at byte 108" + layout_hint},
      {FileBytes("{" + entry("x", "F32", "[1]", "[4,8]") + "}", eight),
       "tensor \"x\" starts at 4 but the buffer starts at 0 (gap) at byte 55" + layout_hint},
      {FileBytes("{" + entry("x", "F32", "[1]", "[0,4]") + "}", eight),
       "4 bytes follow the last tensor's data at byte 66" + layout_hint},
      {FileBytes(
           "{" + entry("x", "F32", "[1]", "[0,4]") + "," + entry("x", "F32", "[1]", "[4,8]") + "}",
           eight),
       "duplicate key \"x\" at byte 62" + syntax_hint},
      {FileBytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"offsets\":[0,8]}}", eight),
       "tensor \"x\" has an unknown field \"offsets\" at byte 40" + syntax_hint},
      {FileBytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[2]}}", eight),
       "tensor \"x\" lacks data_offsets at byte 13" + syntax_hint},
      {FileBytes("{" + entry("x", "F32", "[-2]", "[0,8]") + "}", eight),
       "expected a non-negative integer, found '-' at byte 37" + syntax_hint},
      {FileBytes("{" + entry("x", "F32", "[2.0]", "[0,8]") + "}", eight),
       "expected an integer, found a fraction or exponent at byte 37" + syntax_hint},
      {FileBytes("{" + entry("x", "F32", "[2]", "[0,8,9]") + "}", eight),
       "tensor \"x\" has 3 data_offsets instead of 2 at byte 55" + syntax_hint},
      {FileBytes("{" + entry("x", "F32", "[18446744073709551616]", "[0,8]") + "}", eight),
       "integer over 2^64 - 1 at byte 37" + syntax_hint},
      {FileBytes("{" + entry("x", "F32", "[4611686018427387904,4]", "[0,8]") + "}", eight),
       "tensor \"x\": the tensor's byte length overflows 2^63; check sizes at byte 36" +
           layout_hint},
      {FileBytes("{\"__metadata__\":{\"upguard.complex.x\":\"1\"}," +
                     entry("x", "F16", "[4]", "[0,8]") + "}",
                 eight),
       "metadata \"upguard.complex.x\" marks no F32/F64 tensor \"x\" with a last dimension of 2 "
       "(value must be \"1\") at byte 45" +
           layout_hint},
      {FileBytes("{\"__metadata__\":{\"a\":1}}", ""),
       "expected a string, found '1' at byte 29" + syntax_hint},
      {FileBytes("{\"x\\ud800\":{}}", ""),
       "lone high surrogate in a \\u escape at byte 11" + syntax_hint},
      {FileBytes("{\"\xc3\":{}}", ""), "string is not valid UTF-8 at byte 9" + syntax_hint},
      {FileBytes("{} x", ""), "unexpected bytes after the header object at byte 11" + syntax_hint},
  };
  for (const Case& c : cases) {
    WriteBytes(path, c.bytes);
    auto file = SafetensorsFile::Open(path);
    ASSERT_FALSE(file.ok()) << c.message;
    EXPECT_EQ(file.status().code(), StatusCode::kDataLoss) << c.message;
    EXPECT_EQ(file.status().message(), path + ": " + c.message);
  }
}

TEST(SafetensorsTest, MissingFileIsNotFound) {
  auto file = SafetensorsFile::Open("/nonexistent/upguard/a.safetensors");
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_NE(file.status().message().find("/nonexistent/upguard/a.safetensors"), std::string::npos);
}

TEST(SafetensorsTest, AnEmptyHeaderObjectIsAFileWithoutTensors) {
  const std::string path = TempPath("empty.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, {}, {}).ok());
  EXPECT_EQ(ReadBytes(path), FileBytes("{}      ", ""));
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE((*file)->tensors().empty());
}

TEST(SafetensorsJsonTest, StringsDecodeEveryEscape) {
  const std::string header = R"( "a\/b\"\\\u00e9\ud83d\ude00\n\t\b\f\r" [0, 18446744073709551615])";
  JsonCursor cursor("h.json", header, 8);
  std::string text;
  ASSERT_TRUE(cursor.String(&text).ok());
  EXPECT_EQ(text, "a/b\"\\\xc3\xa9\xf0\x9f\x98\x80\n\t\b\f\r");
  std::vector<uint64_t> values;
  ASSERT_TRUE(cursor.UintArray(&values).ok());
  EXPECT_EQ(values, (std::vector<uint64_t>{0, UINT64_MAX}));
  EXPECT_TRUE(cursor.AtEnd());
  std::string written;
  AppendJsonString(text, &written);
  EXPECT_EQ(written, "\"a/b\\\"\\\\\xc3\xa9\xf0\x9f\x98\x80\\n\\t\\b\\f\\r\"");
}

TEST(SafetensorsJsonTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8("plain \xc3\xa9 \xe2\x82\xac \xf4\x8f\xbf\xbf"));
  EXPECT_FALSE(IsValidUtf8("\xc0\x80"));          // overlong NUL
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // cut short
  EXPECT_FALSE(IsValidUtf8("\x80"));              // a lone continuation byte
}

// A valid file, then damaged: cut at every byte, and every header byte replaced by bytes that
// matter to JSON. Open never crashes; every error is DataLoss naming the path and a byte.
class SafetensorsDamageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TempPath("damage.safetensors");
    const std::vector<uint8_t> storage = PatternBytes(64, 9);
    OwnedView a{DType::kFloat32, {2, 3}, {3, 1}, storage.data()};
    OwnedView b{DType::kBFloat16, {0}, {1}, storage.data()};
    OwnedView c{DType::kComplex64, {2}, {1}, storage.data() + 8};
    ASSERT_TRUE(WriteSafetensors(path_, {{"a", a.view()}, {"b", b.view()}, {"c", c.view()}},
                                 {{"k\"ey", "v\\alue"}})
                    .ok());
    bytes_ = ReadBytes(path_);
    std::memcpy(&header_size_, bytes_.data(), 8);
  }

  // Opens the damaged bytes: OK (returns true), or the error shape every failure must have.
  bool ExpectOpenIsSafe(const std::string& damaged, const std::string& what) {
    const std::string path = path_ + ".damaged";
    WriteBytes(path, damaged);
    auto file = SafetensorsFile::Open(path);
    if (file.ok()) {
      for (const StoredTensor& tensor : (*file)->tensors()) {
        EXPECT_LE(tensor.bytes.size(), damaged.size()) << what;
      }
      return true;
    }
    const Status status = file.status();
    const std::string& message = status.message();
    EXPECT_EQ(status.code(), StatusCode::kDataLoss) << what << ": " << message;
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << what << ": " << message;
    const size_t at = message.find(" at byte ");
    EXPECT_NE(at, std::string::npos) << what << ": " << message;
    if (at != std::string::npos) {
      EXPECT_LE(std::stoull(message.substr(at + 9)), damaged.size()) << what << ": " << message;
    }
    return false;
  }

  std::string path_;
  std::string bytes_;
  uint64_t header_size_ = 0;
};

TEST_F(SafetensorsDamageTest, TruncationAtEveryByteIsAnError) {
  for (size_t cut = 0; cut < bytes_.size(); ++cut) {
    EXPECT_FALSE(ExpectOpenIsSafe(bytes_.substr(0, cut), "cut at " + std::to_string(cut)));
  }
}

TEST_F(SafetensorsDamageTest, ReplacedHeaderBytesNeverCrash) {
  const std::string replacements = std::string("\x00\xff\x80{}[],:\"\\ 0-9e.u", 18);
  int failures = 0;
  for (size_t byte_idx = 0; byte_idx < 8 + header_size_; ++byte_idx) {
    for (const char replacement : replacements) {
      if (bytes_[byte_idx] == replacement) continue;
      std::string damaged = bytes_;
      damaged[byte_idx] = replacement;
      failures += !ExpectOpenIsSafe(damaged, "byte " + std::to_string(byte_idx) + " = " +
                                                 std::to_string(static_cast<uint8_t>(replacement)));
    }
  }
  EXPECT_GT(failures, 1000);
}

}  // namespace
}  // namespace upguard
