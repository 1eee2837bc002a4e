#include "trace/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace upguard {
namespace {

// RFC 3720 (iSCSI) appendix B.4 test vectors plus the classic check value.
TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  std::vector<uint8_t> zeros(32, 0x00), ones(32, 0xFF), ascending(32), descending(32);
  for (int byte_idx = 0; byte_idx < 32; ++byte_idx) {
    ascending[byte_idx] = static_cast<uint8_t>(byte_idx);
    descending[byte_idx] = static_cast<uint8_t>(31 - byte_idx);
  }
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(ascending.data(), ascending.size()), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(descending.data(), descending.size()), 0x113FDB5Cu);
}

TEST(Crc32cTest, ExtendEqualsOneShotAtEverySplit) {
  const std::string data = "The quick brown fox jumps over the lazy dog, twice over.";
  const uint32_t whole = Crc32c(data.data(), data.size());
  for (size_t split = 0; split <= data.size(); ++split) {
    const uint32_t head = Crc32c(data.data(), split);
    EXPECT_EQ(Crc32cExtend(head, data.data() + split, data.size() - split), whole) << split;
  }
}

TEST(Crc32cTest, SoftwareEqualsHardwareAtEveryLengthAndAlignment) {
  if (!internal::Crc32cHardwareAvailable()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937 rng(42);
  std::vector<uint8_t> data(1100);
  for (uint8_t& byte : data) byte = static_cast<uint8_t>(rng());
  for (size_t align = 0; align < 8; ++align) {
    for (size_t size = 0; size + align <= data.size(); size += (size < 80 ? 1 : 37)) {
      const uint8_t* p = data.data() + align;
      ASSERT_EQ(internal::Crc32cExtendSoftware(0x12345678, p, size),
                internal::Crc32cExtendHardware(0x12345678, p, size))
          << "align " << align << " size " << size;
    }
  }
  EXPECT_EQ(internal::Crc32cExtendHardware(0, "123456789", 9), 0xE3069283u);
}

TEST(Crc32cTest, SoftwareMatchesKnownValue) {
  EXPECT_EQ(internal::Crc32cExtendSoftware(0, "123456789", 9), 0xE3069283u);
}

}  // namespace
}  // namespace upguard
