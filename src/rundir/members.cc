#include "rundir/members.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "rundir/entries.h"

namespace upguard {
namespace {

std::string MemberPath(const std::string& staging, const ProcessIdentity& process) {
  return staging + "/" + kMemberPrefix + process.host + "-" + std::to_string(process.pid);
}

}  // namespace

Status AddMember(const std::string& staging, const ProcessIdentity& process,
                 const std::string& what) {
  nlohmann::json json = process.ToJson();
  json["what"] = what;
  return WriteFileAtomically(MemberPath(staging, process), json.dump() + "\n");
}

void RemoveMember(const std::string& staging, const ProcessIdentity& process) {
  unlink(MemberPath(staging, process).c_str());
}

StatusOr<std::vector<Member>> ListMembers(const std::string& staging) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(staging));
  std::vector<Member> members;
  for (const std::string& name : names) {
    if (name.rfind(kMemberPrefix, 0) != 0 || name.find(".tmp.") != std::string::npos) continue;
    StatusOr<std::string> text = ReadFileToString(staging + "/" + name);
    if (!text.ok()) continue;  // removed meanwhile
    const nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    std::optional<ProcessIdentity> process = ProcessIdentity::FromJson(json);
    if (!process) continue;
    Member member;
    member.process = *process;
    if (json.contains("what") && json["what"].is_string()) member.what = json["what"];
    member.file = staging + "/" + name;
    members.push_back(std::move(member));
  }
  return members;
}

std::vector<Member> LiveMembers(const std::vector<Member>& members) {
  std::vector<Member> live;
  for (const Member& member : members) {
    if (MayBeAlive(member.process)) live.push_back(member);
  }
  return live;
}

std::string DescribeMembers(const std::vector<Member>& members) {
  std::string text;
  for (const Member& member : members) {
    if (!text.empty()) text += ", ";
    text += member.process.Describe();
    if (!member.what.empty()) text += " (" + member.what + ")";
  }
  return text;
}

}  // namespace upguard
