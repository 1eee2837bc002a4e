#include "trace/varint.h"

#include <gtest/gtest.h>

#include <limits>

namespace upguard {
namespace {

TEST(VarintTest, RoundTripsAndUsesShortestForm) {
  const struct {
    uint64_t value;
    size_t bytes;
  } cases[] = {{0, 1},
               {1, 1},
               {127, 1},
               {128, 2},
               {300, 2},
               {16383, 2},
               {16384, 3},
               {std::numeric_limits<uint32_t>::max(), 5},
               {uint64_t{1} << 63, 10},
               {std::numeric_limits<uint64_t>::max(), 10}};
  for (const auto& c : cases) {
    char buf[kMaxVarintBytes];
    ASSERT_EQ(EncodeVarint(c.value, buf), c.bytes) << c.value;
    const char* p = buf;
    uint64_t decoded = 0;
    ASSERT_TRUE(DecodeVarint(&p, buf + c.bytes, &decoded)) << c.value;
    EXPECT_EQ(decoded, c.value);
    EXPECT_EQ(p, buf + c.bytes);
  }
  std::string out;
  AppendVarint(300, &out);
  EXPECT_EQ(out, std::string("\xac\x02", 2));
}

TEST(VarintTest, TruncatedVarintFailsWithoutMoving) {
  char buf[kMaxVarintBytes];
  const size_t size = EncodeVarint(std::numeric_limits<uint64_t>::max(), buf);
  for (size_t cut = 0; cut < size; ++cut) {
    const char* p = buf;
    uint64_t value = 7;
    EXPECT_FALSE(DecodeVarint(&p, buf + cut, &value)) << cut;
    EXPECT_EQ(p, buf);
  }
}

TEST(VarintTest, RejectsOverlongAndOverflowing) {
  const char eleven[] = "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00";
  const char* p = eleven;
  uint64_t value;
  EXPECT_FALSE(DecodeVarint(&p, eleven + 11, &value));
  const char overflow[] = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02";
  p = overflow;
  EXPECT_FALSE(DecodeVarint(&p, overflow + 10, &value));
  const char padded_zero[] = "\x80\x00";  // a non-shortest form is accepted
  p = padded_zero;
  EXPECT_TRUE(DecodeVarint(&p, padded_zero + 2, &value));
  EXPECT_EQ(value, 0u);
}

TEST(VarintTest, ZigZag) {
  EXPECT_EQ(ZigZagEncode(0), 0u);
  EXPECT_EQ(ZigZagEncode(-1), 1u);
  EXPECT_EQ(ZigZagEncode(1), 2u);
  EXPECT_EQ(ZigZagEncode(-2), 3u);
  for (int64_t value : {int64_t{0}, int64_t{-5}, int64_t{123456789},
                        std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(ZigZagDecode(ZigZagEncode(value)), value);
  }
}

}  // namespace
}  // namespace upguard
