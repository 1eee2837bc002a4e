#include "trace/text_syntax.h"

#include <charconv>
#include <cstdio>

namespace upguard::text {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}
bool IsControl(char c) { return static_cast<uint8_t>(c) < 0x20 || c == 0x7F; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads a quoted segment starting at line[*pos] (the opening quote) into `out`.
bool ReadQuoted(std::string_view line, size_t* pos, std::string* out, std::string* error) {
  const char quote = line[(*pos)++];
  while (*pos < line.size()) {
    const char c = line[(*pos)++];
    if (c == quote) return true;
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    if (*pos >= line.size()) break;
    const char escape = line[(*pos)++];
    switch (escape) {
      case '\\':
      case '\'':
      case '"':
        out->push_back(escape);
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 'x': {
        const int hi = *pos + 1 < line.size() ? HexValue(line[*pos]) : -1;
        const int lo = hi >= 0 ? HexValue(line[*pos + 1]) : -1;
        if (lo < 0) {
          *error = "bad \\x escape (want two hex digits)";
          return false;
        }
        out->push_back(static_cast<char>(hi * 16 + lo));
        *pos += 2;
        break;
      }
      default:
        *error = std::string("unknown escape \\") + escape;
        return false;
    }
  }
  *error = std::string("unterminated ") + quote + " quote";
  return false;
}

}  // namespace

bool TokenizeLine(std::string_view line, std::vector<TextToken>* tokens, std::string* error) {
  tokens->clear();
  size_t pos = 0;
  while (true) {
    while (pos < line.size() && IsSpace(line[pos])) ++pos;
    if (pos == line.size() || line[pos] == '#') return true;
    TextToken token;
    while (pos < line.size() && !IsSpace(line[pos])) {
      const char c = line[pos];
      if (c == '\'' || c == '"') {
        token.quoted = true;
        if (!ReadQuoted(line, &pos, &token.text, error)) return false;
        continue;
      }
      if (c == '=' && !token.is_key_value() && !token.quoted) token.eq = token.text.size();
      token.text.push_back(c);
      ++pos;
    }
    tokens->push_back(std::move(token));
  }
}

std::string Quote(std::string_view s, bool always) {
  bool needs_quotes = always || s.empty() || s[0] == '#';
  for (char c : s) {
    if (IsSpace(c) || IsControl(c) || c == '\'' || c == '"' || c == '\\') needs_quotes = true;
  }
  if (!needs_quotes) return std::string(s);
  std::string out = "'";
  for (char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (IsControl(c)) {
          char buf[5];
          std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<uint8_t>(c));
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('\'');
  return out;
}

bool ParseDigestText(std::string_view s, Digest128* digest) {
  if (!s.empty() && s[0] == '@') {
    *digest = DigestBytes(s.data() + 1, s.size() - 1);
    return true;
  }
  if (s.size() != 32) return false;
  *digest = Digest128{};
  for (size_t digit_idx = 0; digit_idx < 32; ++digit_idx) {
    const int nibble = HexValue(s[digit_idx]);
    if (nibble < 0) return false;
    uint64_t& word = digit_idx < 16 ? digest->high : digest->low;
    word = word << 4 | static_cast<uint64_t>(nibble);
  }
  return true;
}

bool ParseShapeText(std::string_view s, DType* dtype, std::vector<int64_t>* shape) {
  const size_t open = s.find('[');
  if (open == std::string_view::npos || s.back() != ']') return false;
  const std::string_view name = s.substr(0, open);
  bool found = false;
  for (uint8_t code = 0; code <= kMaxDType && !found; ++code) {
    found = DTypeName(static_cast<DType>(code)) == name;
    if (found) *dtype = static_cast<DType>(code);
  }
  if (!found) return false;
  shape->clear();
  std::string_view dims = s.substr(open + 1, s.size() - open - 2);
  while (!dims.empty()) {
    const size_t comma = dims.find(',');
    uint64_t dim;
    if (!ParseUint(dims.substr(0, comma), INT64_MAX, &dim)) return false;
    shape->push_back(static_cast<int64_t>(dim));
    if (comma == std::string_view::npos) break;
    dims.remove_prefix(comma + 1);
    if (dims.empty()) return false;  // trailing comma
  }
  return true;
}

std::string ShapeText(DType dtype, const std::vector<int64_t>& shape) {
  std::string out(DTypeName(dtype));
  out.push_back('[');
  for (size_t dim_idx = 0; dim_idx < shape.size(); ++dim_idx) {
    if (dim_idx > 0) out.push_back(',');
    out += std::to_string(shape[dim_idx]);
  }
  out.push_back(']');
  return out;
}

bool ParseUint(std::string_view s, uint64_t max, uint64_t* value) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *value);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty() && *value <= max;
}

bool ParseDouble(std::string_view s, double* value) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *value);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

std::string DoubleText(double value) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, ec == std::errc() ? end : buf);
}

}  // namespace upguard::text
