// Printer half of text_format.h.
#include <nlohmann/json.hpp>

#include "trace/text_format.h"
#include "trace/text_syntax.h"

namespace upguard {
namespace {

bool IsKindWord(std::string_view word) {
  for (uint8_t code = 1; code <= static_cast<uint8_t>(kMaxArgKind); ++code) {
    if (ArgKindName(static_cast<ArgKind>(code)) == word) return true;
  }
  return false;
}

void AppendStats(const TensorStats& stats, std::string* out) {
  *out += " stats=min:" + text::DoubleText(stats.min) + ",max:" + text::DoubleText(stats.max) +
          ",mean:" + text::DoubleText(stats.mean) + ",l2:" + text::DoubleText(stats.l2) +
          ",finite:" + std::to_string(stats.finite_count) +
          ",nan:" + std::to_string(stats.nan_count) +
          ",pinf:" + std::to_string(stats.pos_inf_count) +
          ",ninf:" + std::to_string(stats.neg_inf_count);
}

void AppendArg(const char* side, const ArgRecord& arg, const StringTable& strings,
               std::string* out) {
  *out += "  ";
  *out += side;
  const std::string& name = strings.Get(arg.name);
  if (!name.empty()) *out += " " + text::Quote(name, IsKindWord(name));
  *out += " ";
  *out += ArgKindName(arg.kind);
  switch (arg.kind) {
    case ArgKind::kTensor:
      *out += " " + text::ShapeText(arg.dtype, arg.shape) + " digest=" + arg.digest.Hex();
      if (arg.has_stats) AppendStats(arg.stats, out);
      break;
    case ArgKind::kScalar:
      *out += " " + text::Quote(strings.Get(arg.text), /*always=*/true);
      break;
    case ArgKind::kAlias:
    case ArgKind::kUninit:
    case ArgKind::kOpaque:
      *out += " " + text::ShapeText(arg.dtype, arg.shape);
      break;
    case ArgKind::kUnread:
      *out += " " + text::ShapeText(arg.dtype, arg.shape) +
              " reason=" + std::string(UnreadReasonName(arg.unread));
      if (arg.text != kEmptyString) *out += " detail=" + text::Quote(strings.Get(arg.text));
      break;
    case ArgKind::kNone:
      break;
  }
  if (arg.label != kEmptyString) *out += " label=" + text::Quote(strings.Get(arg.label));
  *out += "\n";
}

void AppendField(const char* key, const std::string& value, std::string* out) {
  if (value.empty()) return;
  *out += " ";
  *out += key;
  *out += "=" + text::Quote(value);
}

}  // namespace

std::string OpToText(const OpRecord& op, const StringTable& strings) {
  std::string out = "op step=" + std::to_string(op.step) +
                    " phase=" + std::string(PhaseName(op.phase)) +
                    " depth=" + std::to_string(op.depth);
  AppendField("name", strings.Get(op.op), &out);
  AppendField("module", strings.Get(op.module), &out);
  AppendField("site", strings.Get(op.call_site), &out);
  AppendField("node", strings.Get(op.node), &out);
  out += "\n";
  for (const ArgRecord& arg : op.inputs) AppendArg("in", arg, strings, &out);
  for (const ArgRecord& arg : op.outputs) AppendArg("out", arg, strings, &out);
  return out;
}

std::string CollectiveToText(uint64_t op_seq, const CollectiveInfo& info,
                             const StringTable& strings) {
  std::string ranks;
  for (int32_t rank : info.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(rank);
  std::string out =
      "collective op=" + std::to_string(op_seq) + " group=" + text::Quote(strings.Get(info.group)) +
      " ranks=[" + ranks + "] group_rank=" + std::to_string(info.group_rank) +
      " group_size=" + std::to_string(info.group_size) + " seq=" + std::to_string(info.seq) +
      " completed=" + (info.completed ? "1" : "0") +
      " ops_before_completion=" + std::to_string(info.ops_before_completion) + "\n";
  for (const ArgRecord& arg : info.outputs) AppendArg("out", arg, strings, &out);
  return out;
}

StatusOr<std::string> TraceToText(const std::string& trace_path,
                                  std::optional<TraceDamage>* damage) {
  ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(trace_path));
  std::string out;
  if (!reader->meta_json().empty()) {
    // Compact, key order kept: the same meta always prints the same line.
    out +=
        "meta " + nlohmann::ordered_json::parse(reader->meta_json(), nullptr, false).dump() + "\n";
  }
  TraceRecord record;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&record));
    if (!more) break;
    if (record.type == RecordType::kOp) {
      out += OpToText(record.op, reader->strings());
    } else if (record.type == RecordType::kCollective) {
      out += CollectiveToText(record.collective.op_seq, *record.collective.info, reader->strings());
    } else {
      out += "stepend " + std::to_string(record.step_end.step) +
             ((record.step_end.flags & kStepFingerprint) != 0 ? " fingerprint" : "") +
             "  # ops=" + std::to_string(record.step_end.op_count) +
             " digest=" + record.step_end.digest.Hex() + "\n";
    }
  }
  if (reader->complete()) out += "end\n";
  if (const std::optional<StoppedRecord>& stopped = reader->stopped()) {
    out += "stopped " + std::to_string(stopped->step) +
           " reason=" + std::string(StopReasonToken(stopped->reason)) +
           (stopped->message.empty() ? "" : "  # " + stopped->message) + "\n";
  }
  if (reader->damage()) out += "# damage: " + reader->damage()->message + "\n";
  if (damage != nullptr) *damage = reader->damage();
  return out;
}

}  // namespace upguard
