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

// Continues a CRC: `crc` is the (finalized) CRC of the bytes before `data`; 0 to start.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);
inline uint32_t Crc32c(const void* data, size_t size) { return Crc32cExtend(0, data, size); }

namespace internal {
uint32_t Crc32cExtendSoftware(uint32_t crc, const void* data, size_t size);
// Precondition: Crc32cHardwareAvailable().
uint32_t Crc32cExtendHardware(uint32_t crc, const void* data, size_t size);
bool Crc32cHardwareAvailable();
}  // namespace internal

}  // namespace upguard
