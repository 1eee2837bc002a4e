// On-disk constants and fixed-layout pieces of the trace format, shared by the writer and the
// reader (docs/formats/trace.md is the normative spec; section numbers refer to it).
//
//   FileHeader header = MakeFileHeader();           // magic, kTraceVersion (6)
//   AppendFixed32(payload_length, &frame);          // little-endian
//   AppendDigest(op.digest, &payload);              // canonical: high BE, low BE
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "digest/digest.h"

namespace upguard {

// §3.1: the 16-byte file header. Fields are little-endian on disk; the struct is only a map of
// the layout (encode and decode go through the byte helpers below, not memcpy of the struct).
struct FileHeader {
  char magic[8];
  uint16_t version;
  uint16_t flags;
  uint32_t reserved;
};
static_assert(sizeof(FileHeader) == 16, "trace header is 16 bytes on disk");

inline constexpr char kTraceMagic[8] = {'U', 'P', 'G', 'T', 'R', 'A', 'C', 'E'};
inline constexpr size_t kFileHeaderBytes = sizeof(FileHeader);
inline constexpr uint16_t kTraceVersion = 6;  // what this writer writes

// §3.2: a frame is length:u32 type:u8 reserved:3 payload crc:u32.
inline constexpr size_t kFrameHeaderBytes = 8;
inline constexpr size_t kFrameTrailerBytes = 4;
inline constexpr size_t kFrameOverheadBytes = kFrameHeaderBytes + kFrameTrailerBytes;
inline constexpr uint32_t kMaxPayloadBytes = 64u << 20;

inline constexpr size_t kDigestBytes = 16;
// §5.3: arg flags.
inline constexpr uint8_t kArgFlagHasStats = 0x01;
inline constexpr uint8_t kArgFlagStatsShared = 0x02;  // v2: with HasStats, stats left out (§5.3.1)
// §5.6: Collective record flags.
inline constexpr uint8_t kCollectiveFlagCompleted = 0x01;

inline void StoreLe16(uint16_t value, char* out) {
  out[0] = static_cast<char>(value);
  out[1] = static_cast<char>(value >> 8);
}
inline void StoreLe32(uint32_t value, char* out) {
  for (int byte_idx = 0; byte_idx < 4; ++byte_idx)
    out[byte_idx] = static_cast<char>(value >> (8 * byte_idx));
}
inline void StoreLe64(uint64_t value, char* out) {
  for (int byte_idx = 0; byte_idx < 8; ++byte_idx)
    out[byte_idx] = static_cast<char>(value >> (8 * byte_idx));
}
inline uint16_t LoadLe16(const char* in) {
  return static_cast<uint16_t>(static_cast<uint8_t>(in[0]) | static_cast<uint8_t>(in[1]) << 8);
}
inline uint32_t LoadLe32(const char* in) {
  uint32_t value = 0;
  for (int byte_idx = 3; byte_idx >= 0; --byte_idx)
    value = value << 8 | static_cast<uint8_t>(in[byte_idx]);
  return value;
}
inline uint64_t LoadLe64(const char* in) {
  uint64_t value = 0;
  for (int byte_idx = 7; byte_idx >= 0; --byte_idx)
    value = value << 8 | static_cast<uint8_t>(in[byte_idx]);
  return value;
}

inline void AppendFixed32(uint32_t value, std::string* out) {
  char buf[4];
  StoreLe32(value, buf);
  out->append(buf, 4);
}
inline void StoreDouble(double value, char* out) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  StoreLe64(bits, out);
}
inline double LoadDouble(const char* in) {
  const uint64_t bits = LoadLe64(in);
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// §1: the canonical digest form, high then low, each big-endian (XXH128_canonical_t).
inline void StoreDigest(const Digest128& digest, char* out) {
  for (int byte_idx = 0; byte_idx < 8; ++byte_idx) {
    out[byte_idx] = static_cast<char>(digest.high >> (56 - 8 * byte_idx));
    out[8 + byte_idx] = static_cast<char>(digest.low >> (56 - 8 * byte_idx));
  }
}
inline Digest128 LoadDigest(const char* in) {
  Digest128 digest;
  for (int byte_idx = 0; byte_idx < 8; ++byte_idx) {
    digest.high = digest.high << 8 | static_cast<uint8_t>(in[byte_idx]);
    digest.low = digest.low << 8 | static_cast<uint8_t>(in[8 + byte_idx]);
  }
  return digest;
}
inline void AppendDigest(const Digest128& digest, std::string* out) {
  char buf[kDigestBytes];
  StoreDigest(digest, buf);
  out->append(buf, kDigestBytes);
}

inline std::string EncodeFileHeader(const FileHeader& header) {
  std::string out(kFileHeaderBytes, '\0');
  std::memcpy(&out[0], header.magic, sizeof(header.magic));
  StoreLe16(header.version, &out[8]);
  StoreLe16(header.flags, &out[10]);
  StoreLe32(header.reserved, &out[12]);
  return out;
}
// Precondition: `in` holds kFileHeaderBytes bytes.
inline FileHeader DecodeFileHeader(const char* in) {
  FileHeader header;
  std::memcpy(header.magic, in, sizeof(header.magic));
  header.version = LoadLe16(in + 8);
  header.flags = LoadLe16(in + 10);
  header.reserved = LoadLe32(in + 12);
  return header;
}
inline FileHeader MakeFileHeader(uint16_t version = kTraceVersion) {
  FileHeader header{};
  std::memcpy(header.magic, kTraceMagic, sizeof(header.magic));
  header.version = version;
  return header;
}

}  // namespace upguard
