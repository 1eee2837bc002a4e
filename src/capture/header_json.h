// The JSON of a safetensors header (docs/formats/capture.md §3), read and written without a
// general JSON library so that every value read keeps its byte offset in the file: an error
// then points at the byte that is wrong, and no input, however damaged, can throw.
//
//   JsonCursor cursor(path, header_text, /*base_offset=*/8);
//   RETURN_IF_ERROR(cursor.Expect('{'));
//   std::string name;
//   RETURN_IF_ERROR(cursor.String(&name));
//
//   std::string out;
//   AppendJsonString("na\"me", &out);  // appends "na\"me", quoted and escaped
//
// The reader accepts the subset of RFC 8259 that safetensors headers use: objects, strings and
// arrays of non-negative integers. Strings must be valid UTF-8 (escapes included: a lone
// surrogate is an error); true, false, null, negative and fractional numbers are errors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "upguard/status.h"

namespace upguard {

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF).
bool IsValidUtf8(std::string_view text);

// Appends `text` as a JSON string: quoted, with '"', '\\' and control characters escaped.
// Other bytes are copied, so the result is UTF-8 when `text` is.
void AppendJsonString(std::string_view text, std::string* out);

// Builds "<path>: <what> at byte <offset>; <hint>" as DataLoss: the one shape of every error
// that reading a safetensors file reports.
Status HeaderError(std::string_view path, const std::string& what, uint64_t offset,
                   std::string_view hint);

class JsonCursor {
 public:
  // `text` is the header; `base_offset` is the file offset of its first byte.
  JsonCursor(std::string_view path, std::string_view text, uint64_t base_offset)
      : path_(path), text_(text), base_offset_(base_offset) {}

  // Skips whitespace and returns the file offset of the next byte.
  uint64_t Offset();
  // Skips whitespace; consumes `c` and returns true if it is next.
  bool Consume(char c);
  // Skips whitespace and consumes `c`, or fails naming what is there instead.
  Status Expect(char c);
  // Skips whitespace; true when nothing else is left.
  bool AtEnd();

  Status String(std::string* out);
  Status Uint(uint64_t* out);
  // "[1, 2, 3]" (possibly empty).
  Status UintArray(std::vector<uint64_t>* out);

  // HeaderError at `offset` with the hint for a malformed header.
  Status Error(const std::string& what, uint64_t offset) const;

 private:
  void SkipSpace();
  // The next byte described for a message: "'x'", "byte 0x07" or "the end of the header".
  std::string Describe() const;
  Status Escape(std::string* out);

  std::string_view path_;
  std::string_view text_;
  uint64_t base_offset_;
  size_t pos_ = 0;
};

}  // namespace upguard
