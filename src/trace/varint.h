// LEB128 varints and zigzag, with bounds-checked decoding (docs/formats/trace.md §4.1).
//
//   char buf[kMaxVarintBytes];
//   size_t n = EncodeVarint(300, buf);            // 2 bytes: ac 02
//   const char* p = buf;
//   uint64_t v;
//   bool ok = DecodeVarint(&p, buf + n, &v);      // v == 300, p == buf + n
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace upguard {

inline constexpr size_t kMaxVarintBytes = 10;

// Writes `value` to `out` (room for kMaxVarintBytes) and returns the number of bytes written.
inline size_t EncodeVarint(uint64_t value, char* out) {
  size_t n = 0;
  while (value >= 0x80) {
    out[n++] = static_cast<char>((value & 0x7F) | 0x80);
    value >>= 7;
  }
  out[n++] = static_cast<char>(value);
  return n;
}

inline void AppendVarint(uint64_t value, std::string* out) {
  char buf[kMaxVarintBytes];
  out->append(buf, EncodeVarint(value, buf));
}

// Decodes one varint from [*p, end). On success advances *p past it. Fails (returns false,
// *p unchanged) when the varint runs past `end`, is longer than 10 bytes, or exceeds 2^64 - 1.
// This one is always inlined, for the payload readers (payload_cursor.h): they read a dozen
// varints per record, and a call for each multi-byte one costs the raw comparison 5 %.
[[gnu::always_inline]] inline bool DecodeVarintInline(const char** p, const char* end,
                                                      uint64_t* value) {
  if (end - *p >= static_cast<ptrdiff_t>(kMaxVarintBytes)) {
    // Every byte a varint may use is in range: no bounds check per byte.
    const uint8_t* in = reinterpret_cast<const uint8_t*>(*p);
    uint64_t result = 0;
    for (size_t byte_idx = 0; byte_idx < kMaxVarintBytes; ++byte_idx) {
      const uint8_t byte = in[byte_idx];
      result |= static_cast<uint64_t>(byte & 0x7F) << (7 * byte_idx);
      if (byte < 0x80) {
        if (byte_idx == kMaxVarintBytes - 1 && byte > 1) return false;  // would overflow
        *value = result;
        *p += byte_idx + 1;
        return true;
      }
    }
    return false;  // longer than 10 bytes
  }
  const char* cursor = *p;
  uint64_t result = 0;
  for (size_t byte_idx = 0; byte_idx < kMaxVarintBytes; ++byte_idx) {
    if (cursor == end) return false;
    const uint8_t byte = static_cast<uint8_t>(*cursor++);
    if (byte_idx == kMaxVarintBytes - 1 && byte > 1) return false;  // would overflow 64 bits
    result |= static_cast<uint64_t>(byte & 0x7F) << (7 * byte_idx);
    if ((byte & 0x80) == 0) {
      *value = result;
      *p = cursor;
      return true;
    }
  }
  return false;
}

// DecodeVarintInline, inlined where the compiler sees fit.
inline bool DecodeVarint(const char** p, const char* end, uint64_t* value) {
  return DecodeVarintInline(p, end, value);
}

// Zigzag maps signed to unsigned so small magnitudes stay short: 0→0, -1→1, 1→2, -2→3, ...
inline uint64_t ZigZagEncode(int64_t value) {
  return (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
}
inline int64_t ZigZagDecode(uint64_t value) {
  return static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
}

}  // namespace upguard
