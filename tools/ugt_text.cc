// upguard_ugt_text: the text form of a trace <-> a binary .ugt file.
//
//   upguard_ugt_text to-binary tests/golden/gelu_a.txt /tmp/a/rank0.ugt
//   upguard_ugt_text to-text /tmp/a/rank0.ugt
//
// Exit codes: 0 ok; 1 error (bad usage, unreadable or invalid input); 2 to-text printed the
// readable part of a damaged trace (the damage is the last line and is repeated on stderr).
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "base/file.h"
#include "trace/text_format.h"

namespace {

constexpr const char* kUsage =
    "usage: upguard_ugt_text to-binary IN.txt OUT.ugt\n"
    "       upguard_ugt_text to-text IN.ugt\n"
    "Converts between a trace's text form and its binary file (docs/formats/trace.md, "
    "Appendix A).\n";

int Fail(const upguard::Status& status) {
  std::cerr << "upguard_ugt_text: " << status.ToString() << "\n";
  return 1;
}

int ToBinary(const std::string& in_path, const std::string& out_path) {
  upguard::StatusOr<std::string> text = upguard::ReadFileToString(in_path);
  if (!text.ok()) return Fail(text.status());
  const upguard::Status status = upguard::WriteTraceFromText(*text, in_path, out_path);
  return status.ok() ? 0 : Fail(status);
}

int ToText(const std::string& in_path) {
  std::optional<upguard::TraceDamage> damage;
  upguard::StatusOr<std::string> text = upguard::TraceToText(in_path, &damage);
  if (!text.ok()) return Fail(text.status());
  std::cout << *text << std::flush;
  if (!damage) return 0;
  std::cerr << "upguard_ugt_text: " << damage->message << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "to-binary") == 0) return ToBinary(argv[2], argv[3]);
  if (argc == 3 && std::strcmp(argv[1], "to-text") == 0) return ToText(argv[2]);
  const bool help =
      argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0);
  (help ? std::cout : std::cerr) << kUsage;
  return help ? 0 : 1;
}
