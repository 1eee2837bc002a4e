#include "capture/header_json.h"

#include <cstdio>
#include <utility>

namespace upguard {
namespace {

constexpr std::string_view kSyntaxHint =
    "the header is not safetensors JSON (docs/formats/capture.md §3); the file is damaged or "
    "was not written as safetensors";

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// JSON's two-character escapes: the letter after the backslash, and the byte it stands for.
constexpr std::pair<char, char> kShortEscapes[] = {
    {'"', '"'},  {'\\', '\\'}, {'/', '/'},  {'b', '\b'},
    {'f', '\f'}, {'n', '\n'},  {'r', '\r'}, {'t', '\t'},
};

// The escape letter for `c`, or 0 when the writer copies `c` as it is ('/' included).
char ShortEscapeLetter(char c) {
  for (const auto& [letter, byte] : kShortEscapes) {
    if (byte == c && c != '/') return letter;
  }
  return 0;
}

void AppendUtf8(uint32_t code_point, std::string* out) {
  if (code_point < 0x80) {
    out->push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const auto lead = static_cast<uint8_t>(text[pos]);
    if (lead < 0x80) {
      ++pos;
      continue;
    }
    size_t extra = 0;
    uint32_t code_point = 0;
    uint32_t smallest = 0;  // below this the sequence is overlong
    if ((lead & 0xE0) == 0xC0) {
      extra = 1, code_point = lead & 0x1F, smallest = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      extra = 2, code_point = lead & 0x0F, smallest = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
      extra = 3, code_point = lead & 0x07, smallest = 0x10000;
    } else {
      return false;
    }
    if (text.size() - pos <= extra) return false;
    for (size_t byte_idx = 1; byte_idx <= extra; ++byte_idx) {
      const auto next = static_cast<uint8_t>(text[pos + byte_idx]);
      if ((next & 0xC0) != 0x80) return false;
      code_point = (code_point << 6) | (next & 0x3F);
    }
    if (code_point < smallest || code_point > 0x10FFFF ||
        (code_point >= 0xD800 && code_point <= 0xDFFF)) {
      return false;
    }
    pos += extra + 1;
  }
  return true;
}

void AppendJsonString(std::string_view text, std::string* out) {
  out->push_back('"');
  for (const char c : text) {
    if (const char letter = ShortEscapeLetter(c)) {
      out->push_back('\\');
      out->push_back(letter);
    } else if (static_cast<uint8_t>(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", static_cast<unsigned>(c));
      out->append(escape);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

Status HeaderError(std::string_view path, const std::string& what, uint64_t offset,
                   std::string_view hint) {
  return DataLoss(std::string(path) + ": " + what + " at byte " + std::to_string(offset) + "; " +
                  std::string(hint));
}

void JsonCursor::SkipSpace() {
  while (pos_ < text_.size() && IsSpace(text_[pos_])) ++pos_;
}

uint64_t JsonCursor::Offset() {
  SkipSpace();
  return base_offset_ + pos_;
}

bool JsonCursor::Consume(char c) {
  SkipSpace();
  if (pos_ >= text_.size() || text_[pos_] != c) return false;
  ++pos_;
  return true;
}

Status JsonCursor::Expect(char c) {
  if (Consume(c)) return Status::Ok();
  return Error(std::string("expected '") + c + "', found " + Describe(), base_offset_ + pos_);
}

bool JsonCursor::AtEnd() {
  SkipSpace();
  return pos_ == text_.size();
}

Status JsonCursor::Error(const std::string& what, uint64_t offset) const {
  return HeaderError(path_, what, offset, kSyntaxHint);
}

std::string JsonCursor::Describe() const {
  if (pos_ >= text_.size()) return "the end of the header";
  const auto c = static_cast<uint8_t>(text_[pos_]);
  if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
  char hex[16];
  std::snprintf(hex, sizeof(hex), "byte 0x%02x", c);
  return hex;
}

Status JsonCursor::String(std::string* out) {
  SkipSpace();
  const uint64_t start = base_offset_ + pos_;
  if (pos_ >= text_.size() || text_[pos_] != '"') {
    return Error("expected a string, found " + Describe(), start);
  }
  ++pos_;
  out->clear();
  size_t run_start = pos_;  // bytes copied as they are, up to the next escape
  while (true) {
    if (pos_ >= text_.size()) return Error("unterminated string", start);
    const char c = text_[pos_];
    if (c == '"') break;
    if (static_cast<uint8_t>(c) < 0x20) {
      return Error("unescaped control character " + Describe() + " in a string",
                   base_offset_ + pos_);
    }
    if (c != '\\') {
      ++pos_;
      continue;
    }
    out->append(text_.substr(run_start, pos_ - run_start));
    RETURN_IF_ERROR(Escape(out));
    run_start = pos_;
  }
  out->append(text_.substr(run_start, pos_ - run_start));
  ++pos_;
  if (!IsValidUtf8(*out)) return Error("string is not valid UTF-8", start);
  return Status::Ok();
}

// At a backslash: decodes one escape (a surrogate pair counts as one) onto `out`.
Status JsonCursor::Escape(std::string* out) {
  const uint64_t start = base_offset_ + pos_;
  ++pos_;
  if (pos_ >= text_.size()) return Error("unterminated escape", start);
  const char kind = text_[pos_++];
  if (kind != 'u') {
    for (const auto& [letter, byte] : kShortEscapes) {
      if (letter == kind) {
        out->push_back(byte);
        return Status::Ok();
      }
    }
    return Error("unknown escape '\\" + std::string(1, kind) + "'", start);
  }
  auto hex4 = [this](uint32_t* value) {
    if (text_.size() - pos_ < 4) return false;
    *value = 0;
    for (int digit_idx = 0; digit_idx < 4; ++digit_idx) {
      const int digit = HexValue(text_[pos_ + digit_idx]);
      if (digit < 0) return false;
      *value = (*value << 4) | static_cast<uint32_t>(digit);
    }
    pos_ += 4;
    return true;
  };
  uint32_t code_point = 0;
  if (!hex4(&code_point)) return Error("\\u needs four hex digits", start);
  if (code_point >= 0xDC00 && code_point <= 0xDFFF) {
    return Error("lone low surrogate in a \\u escape", start);
  }
  if (code_point >= 0xD800 && code_point <= 0xDBFF) {
    uint32_t low = 0;
    if (text_.substr(pos_, 2) != "\\u") return Error("lone high surrogate in a \\u escape", start);
    pos_ += 2;
    if (!hex4(&low) || low < 0xDC00 || low > 0xDFFF) {
      return Error("a high surrogate must be followed by a \\u low surrogate", start);
    }
    code_point = 0x10000 + ((code_point - 0xD800) << 10) + (low - 0xDC00);
  }
  AppendUtf8(code_point, out);
  return Status::Ok();
}

Status JsonCursor::Uint(uint64_t* out) {
  SkipSpace();
  const uint64_t start = base_offset_ + pos_;
  if (pos_ >= text_.size() || !IsDigit(text_[pos_])) {
    return Error("expected a non-negative integer, found " + Describe(), start);
  }
  if (text_[pos_] == '0' && pos_ + 1 < text_.size() && IsDigit(text_[pos_ + 1])) {
    return Error("integer with a leading zero", start);
  }
  uint64_t value = 0;
  while (pos_ < text_.size() && IsDigit(text_[pos_])) {
    if (__builtin_mul_overflow(value, 10, &value) ||
        __builtin_add_overflow(value, static_cast<uint64_t>(text_[pos_] - '0'), &value)) {
      return Error("integer over 2^64 - 1", start);
    }
    ++pos_;
  }
  if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
    return Error("expected an integer, found a fraction or exponent", start);
  }
  *out = value;
  return Status::Ok();
}

Status JsonCursor::UintArray(std::vector<uint64_t>* out) {
  out->clear();
  RETURN_IF_ERROR(Expect('['));
  if (Consume(']')) return Status::Ok();
  while (true) {
    uint64_t value = 0;
    RETURN_IF_ERROR(Uint(&value));
    out->push_back(value);
    if (Consume(',')) continue;
    if (Consume(']')) return Status::Ok();
    return Error("expected ',' or ']', found " + Describe(), Offset());
  }
}

}  // namespace upguard
