#include "rundir/hidden_runs.h"

#include <filesystem>

#include "base/file.h"
#include "rundir/entries.h"
#include "rundir/run_staging.h"

namespace upguard {

StatusOr<std::vector<HiddenRecording>> FindHiddenRecordings(const std::string& dir) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(dir));
  std::vector<HiddenRecording> hidden;
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    if (!IsStagingName(name) || !IsDirectory(path)) continue;
    HiddenRecording recording;
    recording.rank_files = RankTraceNames(path);
    if (recording.rank_files.empty()) continue;
    recording.name = name;
    recording.path = path;
    ASSIGN_OR_RETURN(recording.members, ListMembers(path));
    recording.live = LiveMembers(recording.members);
    hidden.push_back(std::move(recording));
  }
  return hidden;
}

std::string DescribeHiddenRecordings(const std::string& dir) {
  StatusOr<std::vector<HiddenRecording>> hidden = FindHiddenRecordings(dir);
  if (!hidden.ok()) return "";
  std::string text;
  for (const HiddenRecording& recording : *hidden) {
    std::string traces;
    for (size_t idx = 0; idx < recording.rank_files.size() && idx < 3; ++idx) {
      traces += (idx == 0 ? "" : ", ") + recording.rank_files[idx];
    }
    if (recording.rank_files.size() > 3) traces += ", ...";
    if (!text.empty()) text += "; ";
    if (recording.interrupted()) {
      const size_t writers = recording.members.size();
      const std::string who =
          writers == 0 ? "its recorder no longer runs"
          : writers == 1
              ? "its recorder, " + DescribeMembers(recording.members) + ", no longer runs"
              : "its writers, " + DescribeMembers(recording.members) + ", no longer run";
      text += dir + " holds an interrupted recording in " + recording.path + " (" + traces + "; " +
              who + "): `upguard recover " + dir + "` moves it into place";
    } else {
      text += dir + " holds a recording in progress in " + recording.path + " (" + traces +
              "; written by " + DescribeMembers(recording.live) +
              "): it moves into place when that ends";
    }
  }
  return text;
}

}  // namespace upguard
