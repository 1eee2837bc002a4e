// Recordings in a run directory that are not (yet) in place: the staging directories holding a
// trace. One whose writers all died is an interrupted recording (`upguard record` killed with
// its training); `upguard diff` and `show` name it instead of only finding no trace, and
// `upguard recover DIR` moves it into place.
//
//   ASSIGN_OR_RETURN(std::vector<HiddenRecording> hidden, FindHiddenRecordings("runs/a"));
//   std::string why = DescribeHiddenRecordings("runs/a");  // "" when there is none
#pragma once

#include <string>
#include <vector>

#include "rundir/members.h"
#include "upguard/status.h"

namespace upguard {

struct HiddenRecording {
  std::string name;                     // ".upguard-record-1234"
  std::string path;                     // DIR/.upguard-record-1234
  std::vector<std::string> rank_files;  // rank<N>.ugt in it, sorted
  std::vector<Member> members;          // every process that wrote it and did not finish
  std::vector<Member> live;             // of those, the ones that may still run
  bool interrupted() const { return live.empty(); }
};

// The staging directories in `dir` that hold a trace, by name.
StatusOr<std::vector<HiddenRecording>> FindHiddenRecordings(const std::string& dir);

// A sentence for each hidden recording in `dir`, starting with "DIR holds an interrupted
// recording in ..." (and how to recover it) or "DIR holds a recording in progress in ...";
// "" when there is none.
std::string DescribeHiddenRecordings(const std::string& dir);

}  // namespace upguard
