// The processes writing into one staging directory: one member file each,
// STAGING/.upguard-member-<host>-<pid>, holding its ProcessIdentity and what it is ("upguard
// record", "rank 3"). A process adds its file before it writes and removes it when it is done;
// the last one out moves the run into place (rundir/run_staging.h). A member file whose
// process is known dead (MayBeAlive) belongs to a recorder that was killed.
//
//   RETURN_IF_ERROR(AddMember(staging, ThisProcess(), "rank 0"));
//   ASSIGN_OR_RETURN(std::vector<Member> members, ListMembers(staging));
#pragma once

#include <string>
#include <vector>

#include "rundir/process_identity.h"
#include "upguard/status.h"

namespace upguard {

struct Member {
  ProcessIdentity process;
  std::string what;  // "upguard record", "rank 3"
  std::string file;  // its member file's path
};

Status AddMember(const std::string& staging, const ProcessIdentity& process,
                 const std::string& what);
void RemoveMember(const std::string& staging, const ProcessIdentity& process);
// Every member file of `staging` that can be read (a file being written is skipped).
StatusOr<std::vector<Member>> ListMembers(const std::string& staging);
// Of `members`, those that may still run.
std::vector<Member> LiveMembers(const std::vector<Member>& members);
// "pid 12 on host a (rank 0), pid 13 on host b (rank 1)".
std::string DescribeMembers(const std::vector<Member>& members);

}  // namespace upguard
