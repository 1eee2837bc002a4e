#include "digest/portable/xxh3_128.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <random>
#include <vector>

namespace upguard::portable {
namespace {

std::vector<uint8_t> RandomBytes(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(size);
  for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(rng());
  return bytes;
}

void ExpectLikeLibrary(const uint8_t* data, size_t size) {
  const XXH128_hash_t expected = XXH3_128bits(data, size);
  uint64_t low = 0, high = 0;
  Xxh3_128(data, size, &low, &high);
  ASSERT_EQ(low, expected.low64) << "length " << size;
  ASSERT_EQ(high, expected.high64) << "length " << size;
}

// Every length of every range (0, 1-3, 4-8, 9-16, 17-128, 129-240, long), across several
// blocks of 1024 bytes and their edges.
TEST(PortableXxh3Test, EveryLengthUpToThreeBlocksMatchesXxHash) {
  const std::vector<uint8_t> bytes = RandomBytes(3 * 1024 + 200, 7);
  for (size_t size = 0; size <= bytes.size(); ++size) {
    ExpectLikeLibrary(bytes.data(), size);
    if (HasFatalFailure()) return;
  }
}

// The digest's leaves: whole 64 KiB chunks and short last chunks, from unaligned addresses.
TEST(PortableXxh3Test, ChunkSizedInputsFromAnyAddressMatchXxHash) {
  const std::vector<uint8_t> bytes = RandomBytes(65536 + 16, 11);
  for (size_t offset : {0, 1, 3, 8}) {
    for (size_t size : {65536, 65535, 65472, 64 * 1023 + 1, 4097, 1025, 1024, 241}) {
      ExpectLikeLibrary(bytes.data() + offset, size);
    }
  }
  const std::vector<uint8_t> zeros(65536, 0);
  ExpectLikeLibrary(zeros.data(), zeros.size());
}

// Eight threads can hash one long input: each computes its own accumulator.
TEST(PortableXxh3Test, LanesComputedApartMergeToTheHash) {
  const std::vector<uint8_t> bytes = RandomBytes(65536, 5);
  uint64_t acc[8];
  for (int lane = 7; lane >= 0; --lane) acc[lane] = Xxh3LongLane(bytes.data(), bytes.size(), lane);
  uint64_t low = 0, high = 0;
  Xxh3LongFinish(acc, bytes.size(), &low, &high);
  const XXH128_hash_t expected = XXH3_128bits(bytes.data(), bytes.size());
  EXPECT_EQ(low, expected.low64);
  EXPECT_EQ(high, expected.high64);
}

}  // namespace
}  // namespace upguard::portable
