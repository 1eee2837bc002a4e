#include "report/format_util.h"

#include <cstdio>

namespace upguard {

std::string DescribeArg(const ArgRecord& arg, const StringTable& strings) {
  switch (arg.kind) {
    case ArgKind::kScalar:
      return strings.Get(arg.text);
    case ArgKind::kNone:
      return "None";
    case ArgKind::kTensor:
      return std::string(DTypeName(arg.dtype)) + BracketList(arg.shape);
    case ArgKind::kAlias:
    case ArgKind::kUninit:
    case ArgKind::kOpaque:
      return std::string(DTypeName(arg.dtype)) + BracketList(arg.shape) + " (" +
             std::string(ArgKindName(arg.kind)) + ")";
    case ArgKind::kUnread:
      return std::string(DTypeName(arg.dtype)) + BracketList(arg.shape) + " (not read: " +
             std::string(UnreadReasonName(arg.unread)) +
             (arg.text != kEmptyString ? " " + strings.Get(arg.text) : std::string()) + ")";
  }
  return "?";
}

std::string Num(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

std::string Fit(const std::string& text, size_t width) {
  if (text.size() <= width) return text + std::string(width - text.size(), ' ');
  if (width == 0) return "";
  return text.substr(0, width - 1) + "~";
}

std::string OrDash(const std::string& text) { return text.empty() ? "-" : text; }

}  // namespace upguard
