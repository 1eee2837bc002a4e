#include "watch/summary.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "base/file.h"

namespace upguard::watch {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kStates[] = {"empty", "issued", "started", "completed", "failed"};

Json GroupJson(const GroupView& group) {
  return {{"name", group.name},
          {"backend", group.backend},
          {"size", group.size},
          {"rank_in_group", group.rank_in_group},
          {"issued_seq", group.issued_seq},
          {"completed_seq", group.completed_seq},
          {"members", group.members}};
}

Json SlotJson(const SlotView& slot) {
  const auto state = size_t(slot.state);
  return {{"entry", slot.entry},
          {"group", slot.group},
          {"state", state < std::size(kStates) ? kStates[state] : "empty"},
          {"seq", slot.seq},
          {"step", slot.step},
          {"issued_ns", slot.issued_ns},
          {"started_ns", slot.started_ns},
          {"completed_ns", slot.completed_ns},
          {"count", slot.count},
          {"bytes", slot.bytes},
          {"op", slot.op},
          {"dtype", slot.dtype},
          {"call_site", slot.call_site},
          {"root", slot.root}};
}

Json RankJson(const RankLook& look) {
  const RingSnapshot& ring = look.ring;
  const ActivityView& act = ring.activity;
  Json groups = Json::array(), slots = Json::array();
  for (const GroupView& group : ring.groups) groups.push_back(GroupJson(group));
  for (const SlotView& slot : ring.slots) slots.push_back(SlotJson(slot));
  return {{"rank", ring.rank},
          {"world_size", ring.world_size},
          {"local_rank", ring.local_rank},
          {"pid", ring.pid},
          {"hostname", ring.hostname},
          {"ring", ring.path},
          {"process", ProcessStateName(look.process)},
          {"start_realtime_ns", ring.start_realtime_ns},
          {"start_monotonic_ns", ring.start_monotonic_ns},
          {"heartbeat_ns", ring.heartbeat_ns},
          {"entries", ring.entries},
          {"closed", ring.closed},
          {"net",
           {{"tx_bytes", ring.net.tx_bytes},
            {"rx_bytes", ring.net.rx_bytes},
            {"links_up", ring.net.links_up},
            {"links", ring.net.links},
            {"throttled", ring.net.throttled},
            {"sampled_ns", ring.net_sampled_ns}}},
          {"activity",
           {{"consistent", act.consistent},
            {"step", act.step},
            {"ops", act.ops},
            {"last_op_ns", act.last_op_ns},
            {"dataloader_since_ns", act.dataloader_since_ns},
            {"last_op", act.last_op},
            {"step_ends", act.step_ends}}},
          {"stack",
           {{"request", ring.stack.request},
            {"answered", ring.stack.answered},
            {"answered_ns", ring.stack.answered_ns},
            {"text", ring.stack.text}}},
          {"groups", groups},
          {"slots", slots}};
}

// One JSON value as a field of type T: its type checked and its range too.
template <typename T>
bool Take(const Json& value, T* out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!value.is_boolean()) return false;
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!value.is_string()) return false;
  } else if constexpr (std::is_unsigned_v<T>) {
    if (!value.is_number_unsigned() || value.get<uint64_t>() > std::numeric_limits<T>::max()) {
      return false;
    }
  } else {
    if (!value.is_number_integer()) return false;
    if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX)) return false;
    const int64_t wide = value.get<int64_t>();
    if (wide < std::numeric_limits<T>::min() || wide > std::numeric_limits<T>::max()) {
      return false;
    }
  }
  *out = value.get<T>();
  return true;
}

template <typename T>
bool Take(const Json& value, std::vector<T>* out) {
  if (!value.is_array()) return false;
  out->resize(value.size());
  for (size_t idx = 0; idx < value.size(); ++idx) {
    if (!Take(value[idx], &(*out)[idx])) return false;
  }
  return true;
}

template <typename T>
const char* Kind() {
  if constexpr (std::is_same_v<T, bool>) return "true or false";
  if constexpr (std::is_same_v<T, std::string>) return "a string";
  if constexpr (std::is_same_v<T, std::vector<int>>) return "an array of integers";
  if constexpr (std::is_same_v<T, std::vector<uint64_t>>) return "an array of unsigned integers";
  if constexpr (std::is_same_v<T, uint32_t>) return "an unsigned 32-bit integer";
  if constexpr (std::is_same_v<T, uint64_t>) return "an unsigned integer";
  if constexpr (std::is_same_v<T, int>) return "a 32-bit integer";
  return "an integer";
}

// One JSON object's fields, read with their types checked; an error names the file and the
// field's place in the document.
class Fields {
 public:
  Fields(const Json& object, std::string where, const std::string& path)
      : object_(object), where_(std::move(where)), path_(path) {}

  template <typename T>
  Status Get(const char* name, T* out) const {
    auto found = object_.find(name);
    if (found == object_.end() || !Take(*found, out)) return Bad(name, Kind<T>());
    return Status::Ok();
  }
  // A nested object or array, or an error naming it.
  StatusOr<const Json*> Child(const char* name, bool array) const {
    auto found = object_.find(name);
    if (found == object_.end() || (array ? !found->is_array() : !found->is_object())) {
      return Bad(name, array ? "an array" : "an object");
    }
    return &*found;
  }
  std::string Where(const char* name) const { return where_.empty() ? name : where_ + "." + name; }

 private:
  Status Bad(const char* name, const char* kind) const {
    return DataLoss(path_ + ": field " + Where(name) + " is missing or not " + kind +
                    " (not a version-1 watch summary: docs/formats/watch-summary.md)");
  }

  const Json& object_;
  std::string where_;
  const std::string& path_;
};

StatusOr<ProcessState> ParseProcessState(const std::string& name, const std::string& field,
                                         const std::string& path) {
  for (ProcessState state : {ProcessState::kRunning, ProcessState::kStopped, ProcessState::kGone,
                             ProcessState::kUnknown}) {
    if (name == ProcessStateName(state)) return state;
  }
  return DataLoss(path + ": field " + field + " is '" + name +
                  "', not running, stopped, gone or unknown");
}

StatusOr<SlotView> ParseSlot(const Json& json, const std::string& where, const std::string& path) {
  if (!json.is_object()) return DataLoss(path + ": " + where + " is not an object");
  const Fields fields(json, where, path);
  SlotView slot;
  std::string state;
  RETURN_IF_ERROR(fields.Get("entry", &slot.entry));
  RETURN_IF_ERROR(fields.Get("group", &slot.group));
  RETURN_IF_ERROR(fields.Get("state", &state));
  RETURN_IF_ERROR(fields.Get("seq", &slot.seq));
  RETURN_IF_ERROR(fields.Get("step", &slot.step));
  RETURN_IF_ERROR(fields.Get("issued_ns", &slot.issued_ns));
  RETURN_IF_ERROR(fields.Get("started_ns", &slot.started_ns));
  RETURN_IF_ERROR(fields.Get("completed_ns", &slot.completed_ns));
  RETURN_IF_ERROR(fields.Get("count", &slot.count));
  RETURN_IF_ERROR(fields.Get("bytes", &slot.bytes));
  RETURN_IF_ERROR(fields.Get("op", &slot.op));
  RETURN_IF_ERROR(fields.Get("dtype", &slot.dtype));
  RETURN_IF_ERROR(fields.Get("call_site", &slot.call_site));
  RETURN_IF_ERROR(fields.Get("root", &slot.root));
  const auto* named = std::find(std::begin(kStates), std::end(kStates), state);
  if (named == std::end(kStates)) {
    return DataLoss(path + ": field " + fields.Where("state") + " is '" + state +
                    "', not issued, started, completed or failed");
  }
  slot.state = SlotState(named - std::begin(kStates));
  return slot;
}

StatusOr<GroupView> ParseGroup(const Json& json, const std::string& where,
                               const std::string& path) {
  if (!json.is_object()) return DataLoss(path + ": " + where + " is not an object");
  const Fields fields(json, where, path);
  GroupView group;
  RETURN_IF_ERROR(fields.Get("name", &group.name));
  RETURN_IF_ERROR(fields.Get("backend", &group.backend));
  RETURN_IF_ERROR(fields.Get("size", &group.size));
  RETURN_IF_ERROR(fields.Get("rank_in_group", &group.rank_in_group));
  RETURN_IF_ERROR(fields.Get("issued_seq", &group.issued_seq));
  RETURN_IF_ERROR(fields.Get("completed_seq", &group.completed_seq));
  RETURN_IF_ERROR(fields.Get("members", &group.members));
  return group;
}

StatusOr<RankLook> ParseRank(const Json& json, const std::string& where, const std::string& path) {
  if (!json.is_object()) return DataLoss(path + ": " + where + " is not an object");
  const Fields fields(json, where, path);
  RankLook look;
  RingSnapshot& ring = look.ring;
  std::string process;
  RETURN_IF_ERROR(fields.Get("rank", &ring.rank));
  RETURN_IF_ERROR(fields.Get("world_size", &ring.world_size));
  RETURN_IF_ERROR(fields.Get("local_rank", &ring.local_rank));
  RETURN_IF_ERROR(fields.Get("pid", &ring.pid));
  RETURN_IF_ERROR(fields.Get("hostname", &ring.hostname));
  RETURN_IF_ERROR(fields.Get("ring", &ring.path));
  RETURN_IF_ERROR(fields.Get("process", &process));
  ASSIGN_OR_RETURN(look.process, ParseProcessState(process, fields.Where("process"), path));
  RETURN_IF_ERROR(fields.Get("start_realtime_ns", &ring.start_realtime_ns));
  RETURN_IF_ERROR(fields.Get("start_monotonic_ns", &ring.start_monotonic_ns));
  RETURN_IF_ERROR(fields.Get("heartbeat_ns", &ring.heartbeat_ns));
  RETURN_IF_ERROR(fields.Get("entries", &ring.entries));
  RETURN_IF_ERROR(fields.Get("closed", &ring.closed));

  ASSIGN_OR_RETURN(const Json* net_json, fields.Child("net", false));
  const Fields net(*net_json, fields.Where("net"), path);
  RETURN_IF_ERROR(net.Get("tx_bytes", &ring.net.tx_bytes));
  RETURN_IF_ERROR(net.Get("rx_bytes", &ring.net.rx_bytes));
  RETURN_IF_ERROR(net.Get("links_up", &ring.net.links_up));
  RETURN_IF_ERROR(net.Get("links", &ring.net.links));
  RETURN_IF_ERROR(net.Get("throttled", &ring.net.throttled));
  RETURN_IF_ERROR(net.Get("sampled_ns", &ring.net_sampled_ns));

  ASSIGN_OR_RETURN(const Json* act_json, fields.Child("activity", false));
  const Fields act(*act_json, fields.Where("activity"), path);
  RETURN_IF_ERROR(act.Get("consistent", &ring.activity.consistent));
  RETURN_IF_ERROR(act.Get("step", &ring.activity.step));
  RETURN_IF_ERROR(act.Get("ops", &ring.activity.ops));
  RETURN_IF_ERROR(act.Get("last_op_ns", &ring.activity.last_op_ns));
  RETURN_IF_ERROR(act.Get("dataloader_since_ns", &ring.activity.dataloader_since_ns));
  RETURN_IF_ERROR(act.Get("last_op", &ring.activity.last_op));
  RETURN_IF_ERROR(act.Get("step_ends", &ring.activity.step_ends));

  ASSIGN_OR_RETURN(const Json* stack_json, fields.Child("stack", false));
  const Fields stack(*stack_json, fields.Where("stack"), path);
  RETURN_IF_ERROR(stack.Get("request", &ring.stack.request));
  RETURN_IF_ERROR(stack.Get("answered", &ring.stack.answered));
  RETURN_IF_ERROR(stack.Get("answered_ns", &ring.stack.answered_ns));
  RETURN_IF_ERROR(stack.Get("text", &ring.stack.text));

  ASSIGN_OR_RETURN(const Json* groups, fields.Child("groups", true));
  for (size_t idx = 0; idx < groups->size(); ++idx) {
    const std::string at = fields.Where("groups") + "[" + std::to_string(idx) + "]";
    ASSIGN_OR_RETURN(GroupView group, ParseGroup((*groups)[idx], at, path));
    ring.groups.push_back(std::move(group));
  }
  ASSIGN_OR_RETURN(const Json* slots, fields.Child("slots", true));
  for (size_t idx = 0; idx < slots->size(); ++idx) {
    const std::string at = fields.Where("slots") + "[" + std::to_string(idx) + "]";
    ASSIGN_OR_RETURN(SlotView slot, ParseSlot((*slots)[idx], at, path));
    if (slot.group >= ring.groups.size()) {
      return DataLoss(path + ": field " + at + ".group is " + std::to_string(slot.group) +
                      ", past the " + std::to_string(ring.groups.size()) + " groups");
    }
    ring.slots.push_back(std::move(slot));
  }
  return look;
}

}  // namespace

std::vector<RankLook> SummaryRanks(const std::vector<RankLook>& looks) {
  std::vector<RankLook> out;
  for (const RankLook& look : looks) {
    if (!look.seen_by.empty()) continue;  // another host's: its own summary carries it
    RankLook kept = look;
    std::vector<SlotView>& slots = kept.ring.slots;
    if (slots.size() > kSummarySlotsKept) {
      const size_t cut = slots.size() - kSummarySlotsKept;  // slots are oldest first
      std::vector<SlotView> newest;
      for (size_t idx = 0; idx < slots.size(); ++idx) {
        const bool in_flight =
            slots[idx].state == SlotState::kIssued || slots[idx].state == SlotState::kStarted;
        if (idx >= cut || in_flight) newest.push_back(std::move(slots[idx]));
      }
      slots = std::move(newest);
    }
    out.push_back(std::move(kept));
  }
  return out;
}

std::string SummaryToJson(const Summary& summary) {
  Json ranks = Json::array();
  for (const RankLook& look : summary.ranks) ranks.push_back(RankJson(look));
  const Json doc = {{"format", kSummaryFormat},
                    {"version", kSummaryVersion},
                    {"host", summary.host},
                    {"hostname", summary.hostname},
                    {"monitor_pid", summary.monitor_pid},
                    {"written_ns", summary.written_ns},
                    {"ranks", ranks}};
  return doc.dump() + "\n";
}

StatusOr<Summary> SummaryFromJson(const std::string& text, const std::string& path) {
  const Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return DataLoss(path +
                    ": not a JSON object (a watch summary is one JSON document: "
                    "docs/formats/watch-summary.md)");
  }
  const Fields fields(doc, "", path);
  std::string format;
  int version = 0;
  RETURN_IF_ERROR(fields.Get("format", &format));
  if (format != kSummaryFormat) {
    return DataLoss(path + ": field format is '" + format + "', not '" + kSummaryFormat + "'");
  }
  RETURN_IF_ERROR(fields.Get("version", &version));
  if (version != kSummaryVersion) {
    return DataLoss(path + ": field version is " + std::to_string(version) +
                    "; this upguard reads " + std::to_string(kSummaryVersion) +
                    " (run the same upguard on every host)");
  }
  Summary summary;
  RETURN_IF_ERROR(fields.Get("host", &summary.host));
  RETURN_IF_ERROR(fields.Get("hostname", &summary.hostname));
  RETURN_IF_ERROR(fields.Get("monitor_pid", &summary.monitor_pid));
  RETURN_IF_ERROR(fields.Get("written_ns", &summary.written_ns));
  ASSIGN_OR_RETURN(const Json* ranks, fields.Child("ranks", true));
  for (size_t idx = 0; idx < ranks->size(); ++idx) {
    ASSIGN_OR_RETURN(RankLook look,
                     ParseRank((*ranks)[idx], "ranks[" + std::to_string(idx) + "]", path));
    summary.ranks.push_back(std::move(look));
  }
  return summary;
}

StatusOr<Summary> ReadSummary(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  return SummaryFromJson(text, path);
}

}  // namespace upguard::watch
