#include "trace/unread_tally.h"

#include <algorithm>
#include <tuple>

#include "base/text.h"

namespace upguard {

UnreadCount& UnreadTally::Entry(UnreadReason reason, const std::string& detail) {
  for (UnreadCount& count : counts_) {
    if (count.reason == reason && count.detail == detail) return count;
  }
  counts_.push_back(UnreadCount{reason, detail, 0, 0});
  return counts_.back();
}

void UnreadTally::AddArgs(const std::vector<ArgRecord>& args, const StringTable& strings,
                          size_t first) {
  for (const ArgRecord& arg : args) {
    if (!IsUnreadKind(arg.kind)) continue;
    const std::string& detail = arg.kind == ArgKind::kUnread ? strings.Get(arg.text) : "";
    UnreadCount& count = Entry(arg.unread, detail);
    ++count.tensors;
    const auto entry = static_cast<size_t>(&count - counts_.data());
    if (std::find(op_seen_.begin() + first, op_seen_.end(), entry) == op_seen_.end()) {
      op_seen_.push_back(entry);
      ++count.ops;
    }
  }
}

void UnreadTally::AddOp(const OpRecord& op, const StringTable& strings) {
  op_seen_.clear();
  AddArgs(op.inputs, strings, 0);
  AddArgs(op.outputs, strings, 0);
}

void UnreadTally::AddCollective(const CollectiveInfo& info, const StringTable& strings) {
  op_seen_.clear();
  AddArgs(info.outputs, strings, 0);
}

void UnreadTally::Merge(const std::vector<UnreadCount>& counts) {
  for (const UnreadCount& other : counts) {
    UnreadCount& count = Entry(other.reason, other.detail);
    count.ops += other.ops;
    count.tensors += other.tensors;
  }
}

std::vector<UnreadCount> UnreadTally::Take() {
  std::vector<UnreadCount> counts = std::move(counts_);
  counts_.clear();
  std::sort(counts.begin(), counts.end(), [](const UnreadCount& a, const UnreadCount& b) {
    return std::tie(a.reason, a.detail) < std::tie(b.reason, b.detail);
  });
  return counts;
}

UnreadTotal HiddenTotal(const std::vector<UnreadCount>& counts) {
  UnreadTotal total;
  for (const UnreadCount& count : counts) {
    if (!UnreadHidesValues(count.reason)) continue;
    total.ops += count.ops;
    total.tensors += count.tensors;
  }
  return total;
}

std::vector<UnreadCount> NotCompared(const std::vector<UnreadCount>& a,
                                     const std::vector<UnreadCount>& b) {
  std::vector<UnreadCount> merged;
  for (const std::vector<UnreadCount>* run : {&a, &b}) {
    for (const UnreadCount& count : *run) {
      if (!UnreadHidesValues(count.reason)) continue;
      auto have = std::find_if(merged.begin(), merged.end(), [&](const UnreadCount& entry) {
        return entry.reason == count.reason && entry.detail == count.detail;
      });
      if (have == merged.end()) {
        merged.push_back(count);
        continue;
      }
      have->ops = std::max(have->ops, count.ops);
      have->tensors = std::max(have->tensors, count.tensors);
    }
  }
  UnreadTally sorted;
  sorted.Merge(merged);
  return sorted.Take();
}

std::string UnreadWhy(const UnreadCount& count) {
  const std::string detail = count.detail.empty() ? "" : " " + count.detail;
  switch (count.reason) {
    case UnreadReason::kDevice:
      return "on" + (detail.empty() ? std::string(" another device") : detail) +
             ": upguard reads CPU tensors only";
    case UnreadReason::kLayout:
      return "in layout" + detail + ", which upguard does not read";
    case UnreadReason::kStorage:
      return "whose storage does not hold every element of the view (a tensor subclass's "
             "wrapper, or a storage resized to nothing)";
    case UnreadReason::kDtype:
      return "of dtype" + detail + ", which upguard does not read";
    case UnreadReason::kInFlight:
      return "read while a collective was still writing them (the collective's values are "
             "compared at its completion)";
    case UnreadReason::kUnknown:
      break;
  }
  return "that upguard could not read (the trace does not say why: one of version 5 or "
         "older, or a case this upguard has no name for)";
}

std::string UnreadLine(const UnreadCount& count) {
  return GroupedThousands(count.ops) + (count.ops == 1 ? " op" : " ops") + " (" +
         GroupedThousands(count.tensors) + (count.tensors == 1 ? " tensor" : " tensors") + ") " +
         UnreadWhy(count);
}

}  // namespace upguard
