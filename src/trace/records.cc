#include "trace/records.h"

#include <cerrno>

namespace upguard {

namespace {

struct StopReasonNames {
  StopReason reason;
  std::string_view token;   // JSON, the text form
  std::string_view phrase;  // for people
};
constexpr StopReasonNames kStopReasons[] = {
    {StopReason::kError, "error", "an error"},
    {StopReason::kDiskFull, "disk_full", "disk full"},
    {StopReason::kFileTooLarge, "file_too_large", "file too large"},
    {StopReason::kMaxBytes, "max_bytes", "--max-bytes reached"},
};

const StopReasonNames& NamesOf(StopReason reason) {
  for (const StopReasonNames& names : kStopReasons) {
    if (names.reason == reason) return names;
  }
  return kStopReasons[0];
}

}  // namespace

std::string_view StopReasonToken(StopReason reason) { return NamesOf(reason).token; }
std::string_view StopReasonPhrase(StopReason reason) { return NamesOf(reason).phrase; }

bool ParseStopReasonToken(std::string_view token, StopReason* reason) {
  for (const StopReasonNames& names : kStopReasons) {
    if (names.token == token) {
      *reason = names.reason;
      return true;
    }
  }
  return false;
}

StopReason StopReasonOfErrno(int error) {
  if (error == ENOSPC || error == EDQUOT) return StopReason::kDiskFull;
  if (error == EFBIG) return StopReason::kFileTooLarge;
  return StopReason::kError;
}

std::string StoppedNote(const StoppedRecord& stopped) {
  return "incomplete: recording stopped at step " + std::to_string(stopped.step) + " (" +
         std::string(StopReasonPhrase(stopped.reason)) + ")";
}

StringTable::StringTable() {
  strings_.emplace_back();
  digests_.push_back(DigestBytes("", 0));
}

StringTable::StringTable(const StringTable& other)
    : strings_(other.strings_), digests_(other.digests_) {
  ids_.reserve(strings_.size());
  for (size_t id = 1; id < strings_.size(); ++id) {
    ids_.emplace(std::string_view(strings_[id]), static_cast<StringId>(id));
  }
}

StringTable& StringTable::operator=(const StringTable& other) {
  if (this != &other) *this = StringTable(other);
  return *this;
}

StringId StringTable::Intern(std::string_view s, bool* added) {
  if (s.empty()) {
    if (added != nullptr) *added = false;
    return kEmptyString;
  }
  auto it = ids_.find(s);  // looking up a known string copies nothing
  if (it != ids_.end()) {
    if (added != nullptr) *added = false;
    return it->second;
  }
  const StringId id = static_cast<StringId>(strings_.size());
  const std::string& kept = strings_.emplace_back(s);
  digests_.push_back(DigestBytes(kept.data(), kept.size()));
  ids_.emplace(std::string_view(kept), id);
  if (added != nullptr) *added = true;
  return id;
}

bool StringTable::Find(std::string_view s, StringId* id) const {
  if (s.empty()) {
    *id = kEmptyString;
    return true;
  }
  auto it = ids_.find(s);
  if (it == ids_.end()) return false;
  *id = it->second;
  return true;
}

void AttachCollective(std::shared_ptr<const CollectiveInfo> info, OpRecord* op) {
  if (info->completed) {
    std::vector<ArgRecord> outputs = info->outputs;
    if (outputs.size() == op->outputs.size()) {  // the same tensors: they keep their labels
      for (size_t arg_idx = 0; arg_idx < outputs.size(); ++arg_idx) {
        outputs[arg_idx].label = op->outputs[arg_idx].label;
      }
    }
    op->outputs = std::move(outputs);
  }
  op->collective = std::move(info);
}

std::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kOther:
      return "other";
    case Phase::kForward:
      return "forward";
    case Phase::kBackward:
      return "backward";
    case Phase::kOptimizer:
      return "optimizer";
    case Phase::kInput:
      return "input";
    case Phase::kRecompute:
      return "recompute";
  }
  return "unknown";
}

std::string_view ArgKindName(ArgKind kind) {
  switch (kind) {
    case ArgKind::kTensor:
      return "tensor";
    case ArgKind::kScalar:
      return "scalar";
    case ArgKind::kAlias:
      return "alias";
    case ArgKind::kUninit:
      return "uninit";
    case ArgKind::kNone:
      return "none";
    case ArgKind::kOpaque:
      return "opaque";
    case ArgKind::kUnread:
      return "unread";
  }
  return "unknown";
}

std::string_view UnreadReasonName(UnreadReason reason) {
  switch (reason) {
    case UnreadReason::kUnknown:
      return "unknown";
    case UnreadReason::kDevice:
      return "device";
    case UnreadReason::kLayout:
      return "layout";
    case UnreadReason::kStorage:
      return "storage";
    case UnreadReason::kDtype:
      return "dtype";
    case UnreadReason::kInFlight:
      return "in_flight";
  }
  return "unknown";
}

}  // namespace upguard
