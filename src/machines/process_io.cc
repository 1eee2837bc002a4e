#include "machines/process_io.h"

#include <filesystem>
#include <sstream>

#include "base/file.h"

namespace upguard::machines {
namespace {

namespace fs = std::filesystem;

// The process's counters, or false when it is gone or not ours to read.
bool ReadProcessIo(const std::string& path, ProcessIo* out) {
  StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return false;
  std::istringstream lines(*text);
  bool read_seen = false, write_seen = false;
  for (std::string key; lines >> key;) {
    uint64_t value = 0;
    if (!(lines >> value)) break;
    if (key == "read_bytes:") {
      out->read_bytes = value;
      read_seen = true;
    } else if (key == "write_bytes:") {
      out->write_bytes = value;
      write_seen = true;
    }
  }
  return read_seen && write_seen;
}

// The parent's process id from /proc/PID/stat ("pid (comm) state ppid ..."; comm may hold
// spaces and parentheses, so the fields are counted after its last ')'), or 0.
int ReadParent(const std::string& path) {
  StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return 0;
  const size_t close = text->rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text->substr(close + 1));
  std::string state;
  int parent = 0;
  fields >> state >> parent;
  return parent;
}

void AddProcesses(const std::string& proc_root, const fs::path& cgroup_dir, CgroupIo* out) {
  StatusOr<std::string> procs = ReadFileToString((cgroup_dir / "cgroup.procs").string());
  if (procs.ok()) {
    std::istringstream pids(*procs);
    for (int pid = 0; pids >> pid;) {
      const std::string dir = proc_root + "/" + std::to_string(pid);
      ProcessIo io;
      if (!ReadProcessIo(dir + "/io", &io)) continue;
      io.parent = ReadParent(dir + "/stat");
      (*out)[pid] = io;
    }
  }
  std::error_code error;
  for (const fs::directory_entry& child : fs::directory_iterator(cgroup_dir, error)) {
    if (child.is_directory(error)) AddProcesses(proc_root, child.path(), out);
  }
}

uint64_t Growth(uint64_t before, uint64_t after) { return after > before ? after - before : 0; }

}  // namespace

StatusOr<CgroupIo> ReadCgroupIo(const std::string& proc_root, const std::string& cgroup_dir) {
  if (!fs::exists(fs::path(cgroup_dir) / "cgroup.procs")) {
    return NotFound(cgroup_dir + "/cgroup.procs not found (is the cgroup made?)");
  }
  CgroupIo out;
  AddProcesses(proc_root, cgroup_dir, &out);
  return out;
}

ProcessIo IoBetween(const CgroupIo& before, const CgroupIo& after) {
  std::map<int, ProcessIo> reaped;  // per parent in the cgroup: what its ended children counted
  for (const auto& [pid, then] : before) {
    if (after.count(pid) != 0 || after.count(then.parent) == 0) continue;
    reaped[then.parent].read_bytes += then.read_bytes;
    reaped[then.parent].write_bytes += then.write_bytes;
  }
  ProcessIo moved;
  for (const auto& [pid, now] : after) {
    auto was = before.find(pid);
    ProcessIo then = was == before.end() ? ProcessIo{} : was->second;
    if (auto children = reaped.find(pid); children != reaped.end()) {
      then.read_bytes += children->second.read_bytes;
      then.write_bytes += children->second.write_bytes;
    }
    moved.read_bytes += Growth(then.read_bytes, now.read_bytes);
    moved.write_bytes += Growth(then.write_bytes, now.write_bytes);
  }
  return moved;
}

}  // namespace upguard::machines
