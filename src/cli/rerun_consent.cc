#include "cli/rerun_consent.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include "base/identity.h"

namespace upguard {
namespace {

// The path with every symlink resolved; "" when it does not exist.
std::string RealPath(const std::string& path) {
  char real[PATH_MAX];
  return realpath(path.c_str(), real) == nullptr ? std::string() : std::string(real);
}

// `text` with control characters as \xNN: text from meta.json goes to the terminal.
std::string Printable(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
      continue;
    }
    char escaped[5];
    std::snprintf(escaped, sizeof(escaped), "\\x%02x", byte);
    out += escaped;
  }
  return out;
}

bool NeedsNoQuotes(const std::string& word) {
  if (word.empty()) return false;
  return std::all_of(word.begin(), word.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
  });
}

std::string QuotedWord(const std::string& word) {
  if (NeedsNoQuotes(word)) return word;
  const bool control = std::any_of(word.begin(), word.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
  if (!control) {
    std::string out = "'";
    for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  }
  std::string out = "$'";  // bash's ANSI-C quoting: the word back, byte for byte
  for (const char c : word) {
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      out += Printable(std::string(1, c));
    }
  }
  return out + "'";
}

std::string Who(int64_t uid, const std::string& user) {
  return "uid " + std::to_string(uid) + (user.empty() ? "" : " (" + Printable(user) + ")");
}

// The file Run::Meta() was read from: meta.json, or rank 0's trace when meta.json has no argv.
std::string MetaSource(const Run& run) {
  return run.meta.contains("argv") || run.ranks.empty() ? run.dir + "/meta.json"
                                                        : run.ranks[0].path;
}

std::string StringField(const nlohmann::json& meta, const char* key) {
  auto it = meta.find(key);
  return it != meta.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Whereabouts Whereabouts::Here() {
  Whereabouts here;
  here.uid = static_cast<int64_t>(getuid());
  here.user = UserName(here.uid);
  here.host = HostName();
  return here;
}

std::string ShellQuoted(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : " ") + QuotedWord(word);
  return text;
}

std::string WhyNotOwn(const Run& run, const Whereabouts& here) {
  const nlohmann::json& meta = run.Meta();
  const std::string source = MetaSource(run);
  std::vector<std::string> why;
  auto uid = meta.find("uid");
  const bool has_uid = uid != meta.end() && uid->is_number_integer();
  const bool has_host = meta.contains("hostname") && meta["hostname"].is_string();
  const std::string cwd = StringField(meta, "cwd");
  const bool has_cwd_real = meta.contains("cwd_real") && meta["cwd_real"].is_string();
  std::string missing;
  for (const auto& [key, has] : {std::pair<const char*, bool>{"uid", has_uid},
                                 {"hostname", has_host},
                                 {"cwd_real", has_cwd_real || !meta.contains("cwd")}}) {
    if (!has) missing += (missing.empty() ? "" : ", ") + std::string(key);
  }
  if (!missing.empty()) {
    why.push_back(source + " does not say who recorded it and where (no " + missing +
                  "): written by an upguard from before runs recorded who and where, by "
                  "another tool or by hand");
  }
  if (has_uid && uid->get<int64_t>() != here.uid) {
    why.push_back("it was recorded by " + Who(uid->get<int64_t>(), StringField(meta, "user")) +
                  ", you are " + Who(here.uid, here.user));
  }
  const std::string host = StringField(meta, "hostname");
  if (has_host && (host != here.host || host.empty())) {
    why.push_back("it was recorded on host '" + Printable(host) + "', this is '" +
                  Printable(here.host) + "'");
  }
  if (!cwd.empty()) {
    const std::string real = RealPath(cwd);
    const std::string recorded = StringField(meta, "cwd_real");
    if (real.empty()) {
      why.push_back("its working directory " + QuotedWord(cwd) + " does not exist here");
    } else if (has_cwd_real && real != recorded) {
      why.push_back("its working directory " + QuotedWord(cwd) + " is " + QuotedWord(real) +
                    " now, " + QuotedWord(recorded) + " when it was recorded");
    }
  }
  struct stat info {};
  if (stat(source.c_str(), &info) == 0) {
    if (static_cast<int64_t>(info.st_uid) != here.uid) {
      why.push_back(source + " belongs to uid " + std::to_string(info.st_uid) + ", not to you");
    }
    if ((info.st_mode & S_IWOTH) != 0) why.push_back(source + " is writable by every user");
  }
  std::string text;
  for (const std::string& clause : why) text += (text.empty() ? "" : "; ") + clause;
  return text;
}

StatusOr<std::shared_ptr<RerunConsent>> RerunConsent::Make(const std::vector<std::string>& trusted,
                                                           bool may_ask) {
  std::vector<std::string> real;
  for (const std::string& dir : trusted) {
    const std::string path = RealPath(dir);
    if (path.empty()) {
      return InvalidArgument("--trust-run " + dir +
                             ": no such run directory; name the run whose recorded command "
                             "may run, as given to the command");
    }
    real.push_back(path);
  }
  return std::shared_ptr<RerunConsent>(
      new RerunConsent(std::move(real), may_ask, Whereabouts::Here()));
}

Status RerunConsent::Allow(const Run& run, const RecordRequest& request,
                           const std::vector<std::string>& dropped_env, const std::string& side,
                           const std::string& purpose) {
  const std::string dir = RealPath(run.dir);
  if (!dir.empty() && std::find(trusted_.begin(), trusted_.end(), dir) != trusted_.end()) {
    return Status::Ok();
  }
  const std::string why = WhyNotOwn(run, here_);
  if (why.empty()) return Status::Ok();
  std::string text =
      "run " + side + " (" + run.dir + ") is not known to be yours: " + why + ".\nRe-running it " +
      purpose + " would run, in " +
      (request.cwd.empty() ? std::string("the current directory") : QuotedWord(request.cwd)) +
      ":\n  " + ShellQuoted(request.command) + "\n";
  if (!request.env.empty()) {
    text += "with these variables of its metadata set, on top of your environment:\n";
    for (const auto& [name, value] : request.env) {
      text += "  " + QuotedWord(name) + "=" + QuotedWord(value) + "\n";
    }
  }
  if (!dropped_env.empty()) {
    text +=
        "and without these of its metadata, which a re-run never sets (only the numerics "
        "variables upguard records): " +
        ShellQuoted(dropped_env) + "\n";
  }
  if (may_ask_ && isatty(STDIN_FILENO) == 1 && isatty(STDERR_FILENO) == 1) {
    std::fflush(stdout);
    std::fprintf(stderr, "upguard: %sRun it? [y/N] ", text.c_str());
    std::fflush(stderr);
    char line[64] = {};
    std::string answer = std::fgets(line, sizeof(line), stdin) != nullptr ? line : "";
    while (!answer.empty() && std::isspace(static_cast<unsigned char>(answer.back()))) {
      answer.pop_back();
    }
    if (answer == "y" || answer == "Y" || answer == "yes" || answer == "YES" || answer == "Yes") {
      if (!dir.empty()) trusted_.push_back(dir);
      return Status::Ok();
    }
    return Untrusted("run " + side + "'s recorded command was not run (not confirmed)");
  }
  return Untrusted(text + "Read it; to run it, pass --trust-run " + QuotedWord(run.dir) +
                   " (or run upguard on a terminal to be asked)");
}

}  // namespace upguard
