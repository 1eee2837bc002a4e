// Decoding half of record_codec.h. Every read is bounds-checked against the payload
// (payload_cursor.h); counts are checked against the bytes left before anything is resized, so a
// damaged count cannot make the reader allocate more than the payload could describe. The Op
// layout itself is read by op_payload.h, which every reader of Op payloads shares.
#include <limits>
#include <string>

#include "trace/format.h"
#include "trace/op_payload.h"
#include "trace/payload_cursor.h"
#include "trace/record_codec.h"

namespace upguard {
namespace {

using Cursor = PayloadCursor<ReportErrors>;

// An argument as a record holds it, from its view. ReadArg has decoded the dims and statistics
// into `arg` already (ArgTarget); they are cleared here for the kinds without them.
void FillArg(const ArgView& view, const StringTable& strings, ArgRecord* arg) {
  arg->kind = view.kind;
  arg->name = view.name;
  arg->dtype = view.dtype;
  if (view.dims == nullptr) arg->shape.clear();
  arg->digest = view.kind == ArgKind::kTensor   ? LoadDigest(view.digest)
                : view.kind == ArgKind::kScalar ? strings.TextDigest(view.text)
                                                : Digest128{};
  arg->has_stats = (view.flags & kArgFlagHasStats) != 0;
  arg->stats_shared = (view.flags & kArgFlagStatsShared) != 0;
  if (!view.stats_here()) arg->stats = TensorStats{};
  arg->text = view.text;
  arg->unread = view.unread;
  arg->label = kEmptyString;  // set by the labels block, if any
}

ArgTarget TargetOf(ArgRecord* arg) { return ArgTarget{&arg->shape, &arg->stats}; }

// WalkOp's visitor for DecodeOp: fills an OpRecord, reusing its vectors.
class OpBuilder {
 public:
  OpBuilder(const StringTable& strings, OpRecord* op) : strings_(strings), op_(op) {}

  bool Header(const OpHeader& header) {
    op_->seq = header.seq;
    op_->step = header.step;
    op_->phase = header.phase;
    op_->depth = header.depth;
    op_->op = header.op;
    op_->module = header.module;
    op_->call_site = header.call_site;
    op_->node = header.node;
    return true;
  }
  bool Count(ArgSide side, uint64_t count) {
    Args(side).resize(count);
    return true;
  }
  ArgTarget Target(ArgSide side, uint64_t index) { return TargetOf(&Args(side)[index]); }
  bool Arg(ArgSide side, uint64_t index, const ArgView& view) {
    FillArg(view, strings_, &Args(side)[index]);
    return true;
  }
  bool ArgsEnd(const char*) { return true; }
  bool Label(uint64_t slot, StringId label) {
    const size_t inputs = op_->inputs.size();
    (slot < inputs ? op_->inputs[slot] : op_->outputs[slot - inputs]).label = label;
    return true;
  }

 private:
  std::vector<ArgRecord>& Args(ArgSide side) {
    return side == ArgSide::kInput ? op_->inputs : op_->outputs;
  }

  const StringTable& strings_;
  OpRecord* op_;
};

}  // namespace

bool DecodeOp(std::string_view payload, const StringTable& strings, OpRecord* op,
              RecordError* error) {
  return DecodeOp(payload, strings, strings.size(), op, error);
}

bool DecodeOp(std::string_view payload, const StringTable& strings, size_t id_limit, OpRecord* op,
              RecordError* error) {
  Cursor in(payload, ReportErrors("Op", error, &strings), id_limit);
  op->collective.reset();  // a reused record: only a Collective record sets it
  OpBuilder builder(strings, op);
  return WalkOp(in, builder);
}

bool DecodeOpPrefix(std::string_view payload, uint64_t* seq, uint32_t* step, RecordError* error) {
  PayloadCursor<CheckOnly> fast(payload, CheckOnly{});  // the index's path: kept lean
  if (ReadOpPrefix(fast, seq, step)) return true;
  Cursor in(payload, ReportErrors("Op", error));  // again, for the message
  return ReadOpPrefix(in, seq, step);
}

bool DecodeCollective(std::string_view payload, const StringTable& strings, size_t id_limit,
                      uint64_t* op_seq, CollectiveInfo* info, RecordError* error) {
  Cursor in(payload, ReportErrors("Collective", error, &strings), id_limit);
  uint64_t rank_count = 0;
  if (!in.Varint("op_seq", op_seq) || !in.Id("group", &info->group) ||
      !in.Varint32("group_rank", &info->group_rank) ||
      !in.Varint32("group_size", &info->group_size) || !in.Count("rank_count", &rank_count)) {
    return false;
  }
  info->ranks.resize(rank_count);
  for (uint64_t rank_idx = 0; rank_idx < rank_count; ++rank_idx) {
    uint32_t rank = 0;
    if (!in.Varint32("ranks", &rank)) return false;
    if (rank > static_cast<uint32_t>(std::numeric_limits<int32_t>::max())) {
      return in.Fail(
          [=](const auto&) { return "rank " + std::to_string(rank) + " is 2^31 or more"; });
    }
    info->ranks[rank_idx] = static_cast<int32_t>(rank);
  }
  uint8_t flags = 0;
  if (!in.Varint("seq", &info->seq) || !in.U8("flags", &flags)) return false;
  if ((flags & ~kCollectiveFlagCompleted) != 0) {
    return in.Fail(
        [=](const auto&) { return "reserved bits set in flags byte " + std::to_string(flags); });
  }
  info->completed = (flags & kCollectiveFlagCompleted) != 0;
  uint64_t outputs = 0;
  if (!in.Varint("ops_before_completion", &info->ops_before_completion) ||
      !ReadArgCount(in, ArgSide::kOutput, &outputs)) {
    return false;
  }
  info->outputs.resize(outputs);
  for (uint64_t arg_idx = 0; arg_idx < outputs; ++arg_idx) {
    ArgRecord& arg = info->outputs[arg_idx];
    ArgView view;
    if (!ReadArg(in, ArgWhere{ArgSide::kOutput, arg_idx}, TargetOf(&arg), &view)) return false;
    FillArg(view, strings, &arg);
  }
  if (!info->completed && !info->outputs.empty()) {
    return in.Fail([](const auto&) { return std::string("outputs without completion"); });
  }
  for (size_t arg_idx = 0; arg_idx < info->outputs.size(); ++arg_idx) {
    if (info->outputs[arg_idx].stats_shared) {
      return in.Fail(
          [=](const auto&) { return "output " + std::to_string(arg_idx) + ": shared statistics"; });
    }
  }
  return true;
}

bool DecodeString(std::string_view payload, StringId* id, std::string_view* text,
                  RecordError* error) {
  Cursor in(payload, ReportErrors("String", error));
  if (!in.Varint32("string id", id)) return false;
  *text = in.Rest();
  return true;
}

bool DecodeStepEnd(std::string_view payload, StepEndRecord* step_end, RecordError* error) {
  Cursor in(payload, ReportErrors("StepEnd", error));
  const char* digest = nullptr;
  if (!in.Varint32("step", &step_end->step) || !in.Varint("op count", &step_end->op_count) ||
      !in.Fixed("digest", kDigestBytes, &digest)) {
    return false;
  }
  step_end->digest = LoadDigest(digest);
  step_end->flags = 0;
  // Appended fields (trace.md §5.4): flags, then bytes of later additions a reader ignores.
  if (in.remaining() > 0 && !in.Varint("flags", &step_end->flags)) return false;
  step_end->unread.clear();
  if (in.remaining() == 0) return true;
  // Version 6: the unread tally; bytes after it are later additions.
  uint64_t entries = 0;
  if (!in.Count("unread entries", &entries)) return false;
  for (uint64_t entry = 0; entry < entries; ++entry) {
    UnreadCount count;
    uint8_t reason = 0;
    uint64_t length = 0;
    const char* detail = nullptr;
    if (!in.U8("unread reason", &reason) || !in.Count("unread detail length", &length) ||
        !in.Fixed("unread detail", length, &detail) || !in.Varint("unread ops", &count.ops) ||
        !in.Varint("unread tensors", &count.tensors)) {
      return false;
    }
    count.reason = reason > static_cast<uint8_t>(kMaxUnreadReason)
                       ? UnreadReason::kUnknown
                       : static_cast<UnreadReason>(reason);
    count.detail.assign(detail, length);
    step_end->unread.push_back(std::move(count));
  }
  return true;
}

bool DecodeEnd(std::string_view payload, uint64_t* op_count, RecordError* error) {
  Cursor in(payload, ReportErrors("End", error));
  return in.Varint("op count", op_count);
}

bool DecodeStopped(std::string_view payload, StoppedRecord* stopped, RecordError* error) {
  Cursor in(payload, ReportErrors("Stopped", error));
  uint8_t reason = 0;
  if (!in.Varint32("step", &stopped->step) || !in.U8("reason", &reason)) return false;
  stopped->reason = reason <= static_cast<uint8_t>(StopReason::kMaxBytes)
                        ? static_cast<StopReason>(reason)
                        : StopReason::kError;
  stopped->message.assign(in.Rest());
  return true;
}

}  // namespace upguard
