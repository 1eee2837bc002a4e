// Lexical pieces of the trace text form (docs/formats/trace.md, Appendix A), shared by its parser
// (text_parse.cc) and printer (text_print.cc). Internal to the trace library.
//
//   std::vector<TextToken> tokens;
//   std::string error;
//   TokenizeLine("in self tensor float32[2] digest=@a  # note", &tokens, &error);
//   // tokens: "in", "self", "tensor", "float32[2]", "digest=@a" (key "digest", value "@a")
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "digest/digest.h"
#include "upguard/tensor.h"

namespace upguard::text {

// One whitespace-separated token, quotes removed and escapes resolved.
struct TextToken {
  std::string text;
  // Position in `text` of the first '=' that stood outside quotes, or npos.
  size_t eq = std::string::npos;
  bool quoted = false;  // some part of it was quoted

  bool is_key_value() const { return eq != std::string::npos; }
  std::string_view key() const { return std::string_view(text).substr(0, eq); }
  std::string_view value() const { return std::string_view(text).substr(eq + 1); }
};

// Splits `line` into tokens, up to a '#' that starts a token (a comment). Fails (false, `error`
// set) on an unterminated quote or a bad escape.
bool TokenizeLine(std::string_view line, std::vector<TextToken>* tokens, std::string* error);

// `s` as one token: bare when it reads back unchanged, else single-quoted with escapes.
std::string Quote(std::string_view s, bool always = false);

// 32 hex digits, or "@label" meaning DigestBytes(label).
bool ParseDigestText(std::string_view s, Digest128* digest);
// "float32[4,64]", "int64[]".
bool ParseShapeText(std::string_view s, DType* dtype, std::vector<int64_t>* shape);
std::string ShapeText(DType dtype, const std::vector<int64_t>& shape);

bool ParseUint(std::string_view s, uint64_t max, uint64_t* value);
bool ParseDouble(std::string_view s, double* value);
// Shortest text that parses back to the same double ("0.1", "-inf", "nan").
std::string DoubleText(double value);

}  // namespace upguard::text
