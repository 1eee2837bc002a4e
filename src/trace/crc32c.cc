#include "trace/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace upguard {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78;  // reflected Castagnoli

using Tables = std::array<std::array<uint32_t, 256>, 8>;

// tables[0] is the byte-at-a-time table; tables[k][b] is the CRC of byte b followed by k zero
// bytes, which lets the loop fold 8 input bytes per step (slicing-by-8).
constexpr Tables MakeTables() {
  Tables tables{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit_idx = 0; bit_idx < 8; ++bit_idx)
      crc = (crc >> 1) ^ (kPolynomial & (0u - (crc & 1)));
    tables[0][byte] = crc;
  }
  for (size_t slice = 1; slice < 8; ++slice) {
    for (size_t byte = 0; byte < 256; ++byte) {
      const uint32_t prev = tables[slice - 1][byte];
      tables[slice][byte] = (prev >> 8) ^ tables[0][prev & 0xFF];
    }
  }
  return tables;
}

constexpr Tables kTables = MakeTables();

uint32_t LoadLe32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

namespace internal {

uint32_t Crc32cExtendSoftware(uint32_t crc, const void* data, size_t size) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint32_t state = ~crc;
  for (; size >= 8; size -= 8, p += 8) {
    const uint32_t lo = LoadLe32(p) ^ state;
    const uint32_t hi = LoadLe32(p + 4);
    state = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
            kTables[4][lo >> 24] ^ kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^
            kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
  }
  for (; size > 0; --size, ++p) state = (state >> 8) ^ kTables[0][(state ^ *p) & 0xFF];
  return ~state;
}

#if defined(__x86_64__)

__attribute__((target("sse4.2"))) uint32_t Crc32cExtendHardware(uint32_t crc, const void* data,
                                                                size_t size) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint64_t state = static_cast<uint32_t>(~crc);
  for (; size >= 8; size -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));  // unaligned load; x86 is little-endian
    state = _mm_crc32_u64(state, word);
  }
  uint32_t state32 = static_cast<uint32_t>(state);
  if (size >= 4) {  // the tail in at most three steps: records are short, tails matter
    uint32_t word;
    std::memcpy(&word, p, sizeof(word));
    state32 = _mm_crc32_u32(state32, word);
    p += 4;
    size -= 4;
  }
  if (size >= 2) {
    uint16_t half;
    std::memcpy(&half, p, sizeof(half));
    state32 = _mm_crc32_u16(state32, half);
    p += 2;
    size -= 2;
  }
  if (size > 0) state32 = _mm_crc32_u8(state32, *p);
  return ~state32;
}

bool Crc32cHardwareAvailable() {
  static const bool available = __builtin_cpu_supports("sse4.2");
  return available;
}

#else

uint32_t Crc32cExtendHardware(uint32_t crc, const void* data, size_t size) {
  return Crc32cExtendSoftware(crc, data, size);
}
bool Crc32cHardwareAvailable() { return false; }

#endif

}  // namespace internal

internal::Crc32cFunction internal::Crc32cBest() {
  return Crc32cHardwareAvailable() ? Crc32cExtendHardware : Crc32cExtendSoftware;
}

}  // namespace upguard
