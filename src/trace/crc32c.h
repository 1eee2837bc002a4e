// CRC32C (Castagnoli): the checksum of every trace frame (docs/formats/trace.md §3.2).
//
//   uint32_t crc = Crc32c(data, size);
//   crc = Crc32cExtend(crc, more, more_size);   // == Crc32c(data ++ more)
//
// Reflected polynomial 0x82F63B78, init and final XOR 0xFFFFFFFF; Crc32c("123456789") is
// 0xE3069283. Uses the SSE4.2 crc32 instruction when the CPU has it, else slicing-by-8 tables;
// both give the same value (tested).
#pragma once

#include <cstddef>
#include <cstdint>

namespace upguard {

namespace internal {
uint32_t Crc32cExtendSoftware(uint32_t crc, const void* data, size_t size);
// Precondition: Crc32cHardwareAvailable().
uint32_t Crc32cExtendHardware(uint32_t crc, const void* data, size_t size);
bool Crc32cHardwareAvailable();
using Crc32cFunction = uint32_t (*)(uint32_t crc, const void* data, size_t size);
// The implementation for this CPU, chosen once.
Crc32cFunction Crc32cBest();
}  // namespace internal

// Continues a CRC: `crc` is the (finalized) CRC of the bytes before `data`; 0 to start.
inline uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
  static const internal::Crc32cFunction best = internal::Crc32cBest();
  return best(crc, data, size);
}
inline uint32_t Crc32c(const void* data, size_t size) { return Crc32cExtend(0, data, size); }

}  // namespace upguard
