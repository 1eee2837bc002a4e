#include "cli/interpreter_probe.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "cli/interpreter_facts_script.h"

namespace upguard {
namespace {

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Splits on spaces and tabs.
std::vector<std::string> Words(std::string_view line) {
  std::vector<std::string> words;
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    size_t end = pos;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
    if (end > pos) words.emplace_back(line.substr(pos, end - pos));
    pos = end;
  }
  return words;
}

bool IsEnvAssignment(const std::string& word) {
  const size_t eq = word.find('=');
  return eq != std::string::npos && eq > 0 && word[0] != '-';
}

// The program `env ARGS...` runs: the first word after env's options and NAME=VALUE words.
size_t SkipEnv(const std::vector<std::string>& words, size_t idx) {
  while (idx < words.size() && Basename(words[idx]) == "env") {
    ++idx;
    while (idx < words.size() && (words[idx][0] == '-' || IsEnvAssignment(words[idx]))) {
      ++idx;
    }
  }
  return idx;
}

// The first 4 KiB of a file, "" when it cannot be read.
std::string ReadHead(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head;
}

}  // namespace

bool IsPythonName(std::string_view name) {
  for (std::string_view stem : {"python", "pypy"}) {
    if (name.substr(0, stem.size()) != stem) continue;
    std::string_view rest = name.substr(stem.size());
    while (!rest.empty() && (std::isdigit(static_cast<unsigned char>(rest[0])) || rest[0] == '.')) {
      rest.remove_prefix(1);
    }
    // A build flag: python3.13t (free-threaded), python3.11d (debug).
    return rest.empty() || rest == "t" || rest == "d" || rest == "m";
  }
  return false;
}

std::string ShebangInterpreter(std::string_view head) {
  if (head.substr(0, 2) != "#!") return "";
  const size_t line_end = head.find('\n');
  std::vector<std::string> words = Words(head.substr(2, line_end - 2));
  const size_t program = SkipEnv(words, 0);
  if (program >= words.size()) return "";
  if (IsPythonName(Basename(words[program])) || line_end == std::string_view::npos) {
    return words[program];
  }
  // pip's script for a long venv path: "#!/bin/sh" + `'''exec' "/venv/bin/python" "$0" "$@"`.
  std::string_view second = head.substr(line_end + 1);
  second = second.substr(0, second.find('\n'));
  constexpr std::string_view kExec = "'''exec' \"";
  if (second.substr(0, kExec.size()) != kExec) return words[program];
  second.remove_prefix(kExec.size());
  return std::string(second.substr(0, second.find('"')));
}

std::string FindOnPath(const std::string& name, std::string_view path_list) {
  if (name.find('/') != std::string::npos) return name;
  size_t pos = 0;
  while (pos <= path_list.size()) {
    size_t end = path_list.find(':', pos);
    if (end == std::string_view::npos) end = path_list.size();
    std::string dir(path_list.substr(pos, end - pos));
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0 && std::ifstream(candidate).good()) {
      return candidate;
    }
    pos = end + 1;
  }
  return "";
}

std::string CommandInterpreter(const std::vector<std::string>& command,
                               std::string_view path_list) {
  const size_t program = SkipEnv(command, 0);
  if (program >= command.size()) return "";
  const std::string& name = command[program];
  if (IsPythonName(Basename(name))) return name;
  const std::string path = FindOnPath(name, path_list);
  if (path.empty()) return "";
  const std::string interpreter = ShebangInterpreter(ReadHead(path));
  return IsPythonName(Basename(interpreter)) ? interpreter : "";
}

StatusOr<InterpreterFacts> ParseInterpreterFacts(std::string_view text, const std::string& python) {
  InterpreterFacts facts;
  facts.python = python;
  std::string imported_version;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, space);
    const std::string value(line.substr(space + 1));
    if (key == "soabi") facts.soabi = value;
    if (key == "torch-dist") facts.torch_version = value;
    if (key == "torch") imported_version = value;
    if (key == "upguard-dir") facts.upguard_dir = value;
  }
  if (facts.soabi.empty()) {
    return InvalidArgument("asking " + python + " which torch it has gave no answer");
  }
  facts.torch_from_metadata = !facts.torch_version.empty();
  if (!facts.torch_from_metadata) facts.torch_version = imported_version;
  return facts;
}

StatusOr<InterpreterFacts> ProbeInterpreter(const std::string& python) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return IoError(std::string("pipe: ") + strerror(errno));
  pid_t pid = fork();
  if (pid < 0) return IoError(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    int null_fd = open("/dev/null", O_WRONLY);
    if (null_fd >= 0) dup2(null_fd, STDERR_FILENO);
    const char* argv[] = {python.c_str(), "-c", kInterpreterFactsScript, nullptr};
    execvp(argv[0], const_cast<char* const*>(argv));
    _exit(127);
  }
  close(out_pipe[1]);
  std::string output;
  char buffer[4096];
  ssize_t got = 0;
  while ((got = read(out_pipe[0], buffer, sizeof(buffer))) != 0) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    output.append(buffer, static_cast<size_t>(got));
  }
  close(out_pipe[0]);
  int wait_status = 0;
  while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    return InvalidArgument("cannot ask " + python + " which torch it has (`" + python +
                           " -c ...` failed)");
  }
  return ParseInterpreterFacts(output, python);
}

}  // namespace upguard
