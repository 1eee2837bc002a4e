#include "rundir/run_lock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "base/file.h"
#include "rundir/entries.h"

namespace upguard {
namespace {

std::string LockPath(const std::string& dir) { return dir + "/" + kLockName; }

std::string Errno() { return std::strerror(errno); }

// A name no other process (on any host) and no other call of this one uses.
std::string UniqueSibling(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp-" + HostName() + "-" + std::to_string(getpid()) + "-" +
         std::to_string(counter.fetch_add(1));
}

std::string LocalTime(int64_t seconds) {
  const time_t when = static_cast<time_t>(seconds);
  tm local{};
  char text[32] = "?";
  if (localtime_r(&when, &local) != nullptr) {
    std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
  }
  return text;
}

}  // namespace

nlohmann::json RunLockInfo::ToJson() const {
  nlohmann::json json = owner.ToJson();
  json["job"] = job;
  json["staging"] = staging;
  json["since"] = since;
  return json;
}

std::optional<RunLockInfo> RunLockInfo::FromJson(const nlohmann::json& json) {
  std::optional<ProcessIdentity> owner = ProcessIdentity::FromJson(json);
  if (!owner || !json.contains("staging") || !json["staging"].is_string()) return std::nullopt;
  RunLockInfo info;
  info.owner = *owner;
  info.staging = json["staging"].get<std::string>();
  if (json.contains("job") && json["job"].is_string()) info.job = json["job"].get<std::string>();
  if (json.contains("since") && json["since"].is_number_integer()) {
    info.since = json["since"].get<int64_t>();
  }
  return info;
}

std::string RunLockInfo::Describe() const {
  std::string text = owner.Describe();
  if (since > 0) text += " since " + LocalTime(since);
  if (!job.empty()) text += " (job " + job + ")";
  return text;
}

StatusOr<bool> CreateFileExclusively(const std::string& path, const std::string& contents) {
  const std::string temp = UniqueSibling(path);
  RETURN_IF_ERROR(WriteFileDurably(temp, contents));
  const int linked = link(temp.c_str(), path.c_str());
  const int link_errno = errno;
  struct stat info {};
  const bool two_links = stat(temp.c_str(), &info) == 0 && info.st_nlink == 2;
  unlink(temp.c_str());
  if (linked == 0 || two_links) return true;  // two links: the reply was lost, the link made
  if (link_errno == EEXIST) return false;
  if (link_errno != EPERM && link_errno != ENOTSUP && link_errno != EOPNOTSUPP) {
    return IoError("cannot create " + path + ": " + std::strerror(link_errno));
  }
  // No hard links on this file system: O_EXCL, the contents written after the create.
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    return IoError("cannot create " + path + ": " + Errno());
  }
  const bool written =
      write(fd, contents.data(), contents.size()) == static_cast<ssize_t>(contents.size());
  const bool synced = fsync(fd) == 0;
  if (close(fd) != 0 || !written || !synced) {
    const std::string reason = Errno();
    unlink(path.c_str());
    return IoError("cannot write " + path + ": " + reason);
  }
  return true;
}

StatusOr<bool> CreateRunLock(const std::string& dir, const RunLockInfo& info) {
  return CreateFileExclusively(LockPath(dir), info.ToJson().dump() + "\n");
}

StatusOr<std::optional<RunLockInfo>> ReadRunLock(const std::string& dir) {
  StatusOr<std::string> text = ReadFileToString(LockPath(dir));
  if (text.status().code() == StatusCode::kNotFound) return std::optional<RunLockInfo>();
  if (!text.ok()) return text.status();
  const nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  std::optional<RunLockInfo> info = RunLockInfo::FromJson(json);
  if (!info) {
    return FailedPrecondition(LockPath(dir) +
                              " is not a lock upguard can read (being written, or damaged); if "
                              "no upguard records into " +
                              dir + ", remove it");
  }
  return info;
}

StatusOr<bool> BreakRunLock(const std::string& dir, const RunLockInfo& expected) {
  // Renamed aside first, so that a lock taken by someone else after ours was read is put back
  // rather than removed.
  const std::string aside = UniqueSibling(LockPath(dir));
  if (rename(LockPath(dir).c_str(), aside.c_str()) != 0) {
    if (errno == ENOENT) return true;  // gone already
    return IoError("cannot remove the stale lock " + LockPath(dir) + ": " + Errno());
  }
  StatusOr<std::string> text = ReadFileToString(aside);
  const nlohmann::json json =
      nlohmann::json::parse(text.ok() ? *text : "", nullptr, /*allow_exceptions=*/false);
  std::optional<RunLockInfo> found = RunLockInfo::FromJson(json);
  if (found && found->ToJson() == expected.ToJson()) {
    unlink(aside.c_str());
    return true;
  }
  if (link(aside.c_str(), LockPath(dir).c_str()) != 0 && errno != EEXIST) {
    return IoError("cannot put the lock " + LockPath(dir) + " back from " + aside + ": " + Errno());
  }
  unlink(aside.c_str());
  return false;
}

void RemoveRunLock(const std::string& dir) { unlink(LockPath(dir).c_str()); }

}  // namespace upguard
