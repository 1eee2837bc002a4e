#include "rundir/process_identity.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

namespace upguard {
namespace {

std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

// Field 22 of /proc/<pid>/stat (starttime, clock ticks after boot); "" when unreadable, "Z"
// for a zombie (killed, not yet reaped: it runs no more). The command name (field 2) is in
// parentheses and may hold spaces: fields are counted after its last ')'.
std::string StartTicks(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  for (int idx = 3; idx <= 22; ++idx) {
    if (!(fields >> field)) return "";
    if (idx == 3 && (field == "Z" || field == "X")) return "Z";
  }
  return field;
}

std::string StartToken(int64_t pid) {
  const std::string ticks = StartTicks(pid);
  return ticks.empty() || ticks == "Z" ? ticks : BootId() + ":" + ticks;
}

}  // namespace

nlohmann::json ProcessIdentity::ToJson() const {
  return {{"pid", pid}, {"host", host}, {"start", start}};
}

std::optional<ProcessIdentity> ProcessIdentity::FromJson(const nlohmann::json& json) {
  if (!json.is_object() || !json.contains("pid") || !json["pid"].is_number_integer() ||
      !json.contains("host") || !json["host"].is_string()) {
    return std::nullopt;
  }
  ProcessIdentity process;
  process.pid = json["pid"].get<int64_t>();
  process.host = json["host"].get<std::string>();
  if (json.contains("start") && json["start"].is_string()) {
    process.start = json["start"].get<std::string>();
  }
  return process;
}

std::string ProcessIdentity::Describe() const {
  return "pid " + std::to_string(pid) + " on host " + host;
}

ProcessIdentity ThisProcess() {
  ProcessIdentity me;
  me.pid = static_cast<int64_t>(getpid());
  me.host = HostName();
  me.start = StartToken(me.pid);
  return me;
}

// A host name gethostname() could not give ("") is nobody's: never this host.
bool OnThisHost(const ProcessIdentity& process) {
  return !process.host.empty() && process.host == HostName();
}

bool MayBeAlive(const ProcessIdentity& process) {
  if (!OnThisHost(process)) return true;
  if (process.pid <= 0) return false;
  if (kill(static_cast<pid_t>(process.pid), 0) != 0 && errno == ESRCH) return false;
  const std::string now = StartToken(process.pid);
  if (now == "Z") return false;
  return now.empty() || process.start.empty() || now == process.start;
}

}  // namespace upguard
