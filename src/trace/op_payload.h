// The Op record's payload layout (docs/formats/trace.md §5.3), read in one place. Every reader of
// an Op payload walks it here, with the same checks in the same order:
//   DecodeOp (record_decode.cc)  builds an OpRecord: WalkOp with a visitor that fills it;
//   TraceIndex                   reads the seq and step only: ReadOpPrefix (DecodeOpPrefix);
//   RawComparer (diff)           compares two payloads where they lie, checking what it skips:
//                                WalkOp over one payload, the other read alongside it.
// Nothing here allocates, except ReadArg into a shape vector a visitor asks it to fill.
//
//   RecordError error;
//   PayloadCursor<ReportErrors> in(payload, ReportErrors("Op", &error, &strings), id_limit);
//   OpHeader header;
//   if (!ReadOpHeader(in, &header)) ... error ...        // or WalkOp(in, visitor): everything
//
// A visitor of WalkOp has these members, called in payload order; each returns false to stop
// the walk (which then returns false):
//   bool Header(const OpHeader& header);                seq .. node
//   bool Count(ArgSide side, uint64_t count);           n_inputs, then n_outputs
//   ArgTarget Target(ArgSide side, uint64_t index);     where ReadArg decodes dims and stats
//   bool Arg(ArgSide side, uint64_t index, const ArgView& arg);
//   bool ArgsEnd(const char* pos);                      after the outputs, before the labels
//   bool Label(uint64_t slot, StringId label);          each of the labels block (§5.3.2)
// Everything is inline: a visitor's empty members cost nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "digest/digest.h"
#include "trace/format.h"
#include "trace/payload_cursor.h"
#include "trace/records.h"

namespace upguard {

// The fields before the arguments. The pointers say where fields lie in the payload, for a
// reader that compares two payloads byte by byte.
struct OpHeader {
  uint64_t seq = 0;
  uint32_t step = 0;
  Phase phase = Phase::kOther;
  uint32_t depth = 0;
  StringId op = kEmptyString;
  StringId module = kEmptyString;
  StringId call_site = kEmptyString;
  StringId node = kEmptyString;
  const char* body = nullptr;  // the phase: what follows the seq and step
  const char* ids = nullptr;   // the op name, then module, call_site and node
  const char* end = nullptr;   // after the node: n_inputs
};

enum class ArgSide : uint8_t { kInput = 0, kOutput = 1 };
// "input", "output": the count field's name and the start of an argument's place in details.
inline const char* SideName(ArgSide side) { return side == ArgSide::kInput ? "input" : "output"; }

// Which argument is read; turned into text ("input 2") only for a message.
struct ArgWhere {
  ArgSide side;
  uint64_t index;
  std::string str() const { return SideName(side) + (" " + std::to_string(index)); }
};

// One argument as read: checked, nothing copied. Fields its kind lacks are zero or null.
struct ArgView {
  ArgKind kind = ArgKind::kNone;
  StringId name = kEmptyString;
  DType dtype = DType::kInvalid;  // tensor, alias, uninit, opaque
  uint64_t ndim = 0;
  const char* dims = nullptr;  // [dims, dims_end): the ndim dims as varints, each < 2^63
  const char* dims_end = nullptr;
  const char* digest = nullptr;   // tensor: kDigestBytes, canonical (LoadDigest)
  uint8_t flags = 0;              // tensor: kArgFlagHasStats, kArgFlagStatsShared
  StringId text = kEmptyString;   // scalar: its text; unread: the reason's detail
  UnreadReason unread = UnreadReason::kUnknown;  // unread
  const char* name_at = nullptr;  // the name id
  const char* body = nullptr;     // after the name: the kind's body
  const char* end = nullptr;      // after the argument

  // The record holds the statistics (has_stats without stats_shared, §5.3.1).
  bool stats_here() const { return flags == kArgFlagHasStats; }
};

// Where ReadArg also decodes what a view only points at: the dims (resized to ndim) and the
// statistics (when stats_here()). Null: only checked.
struct ArgTarget {
  std::vector<int64_t>* shape = nullptr;
  TensorStats* stats = nullptr;
};

// §5.3: seq, step.
template <class Errors>
[[gnu::always_inline]] inline bool ReadOpPrefix(PayloadCursor<Errors>& in, uint64_t* seq,
                                                uint32_t* step) {
  return in.Varint("seq", seq) && in.Varint32("step", step);
}

// §5.3: seq .. node.
template <class Errors>
[[gnu::always_inline]] inline bool ReadOpHeader(PayloadCursor<Errors>& in, OpHeader* header) {
  uint8_t phase = 0;
  if (!ReadOpPrefix(in, &header->seq, &header->step)) return false;
  header->body = in.pos();
  if (!in.U8("phase", &phase)) return false;
  if (__builtin_expect(phase > static_cast<uint8_t>(kMaxPhase), 0)) {
    return in.Fail([=](const auto&) {
      return "unknown phase " + std::to_string(phase) + " (written by a newer upguard?)";
    });
  }
  header->phase = static_cast<Phase>(phase);
  if (!in.Varint32("depth", &header->depth)) return false;
  header->ids = in.pos();
  if (!in.Id("op name", &header->op) || !in.Id("module", &header->module) ||
      !in.Id("call site", &header->call_site) || !in.Id("node", &header->node)) {
    return false;
  }
  header->end = in.pos();
  return true;
}

// n_inputs or n_outputs.
template <class Errors>
[[gnu::always_inline]] inline bool ReadArgCount(PayloadCursor<Errors>& in, ArgSide side,
                                                uint64_t* count) {
  return in.Count(SideName(side), count);
}

namespace op_payload_internal {

// dtype, ndim, dims (§5.3 tensor, alias, uninit, opaque).
template <class Errors>
[[gnu::always_inline]] inline bool ReadShape(PayloadCursor<Errors>& in, ArgWhere where,
                                             std::vector<int64_t>* shape, ArgView* arg) {
  uint8_t dtype = 0;
  if (!in.U8("dtype", &dtype)) return false;
  if (__builtin_expect(dtype > kMaxDType, 0)) {
    return in.Fail([=](const auto&) {
      return where.str() + ": unknown dtype " + std::to_string(dtype) +
             " (written by a newer upguard?)";
    });
  }
  arg->dtype = static_cast<DType>(dtype);
  if (!in.Count("ndim", &arg->ndim)) return false;
  if (shape != nullptr) shape->resize(arg->ndim);
  arg->dims = in.pos();
  for (uint64_t dim_idx = 0; dim_idx < arg->ndim; ++dim_idx) {
    uint64_t dim = 0;
    if (!in.Varint("dims", &dim)) return false;
    if (__builtin_expect(dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), 0)) {
      return in.Fail([=](const auto&) {
        return where.str() + ": dim " + std::to_string(dim) + " is 2^63 or more";
      });
    }
    if (shape != nullptr) (*shape)[dim_idx] = static_cast<int64_t>(dim);
  }
  arg->dims_end = in.pos();
  return true;
}

// min max mean l2 (f64) and four counts (§5.3).
template <class Errors>
[[gnu::always_inline]] inline bool ReadStats(PayloadCursor<Errors>& in, TensorStats* stats) {
  const char* doubles = nullptr;
  if (!in.Fixed("stats", 4 * 8, &doubles)) return false;
  if (stats == nullptr) {
    uint64_t count = 0;
    return in.Varint("stats", &count) && in.Varint("stats", &count) && in.Varint("stats", &count) &&
           in.Varint("stats", &count);
  }
  stats->min = LoadDouble(doubles);
  stats->max = LoadDouble(doubles + 8);
  stats->mean = LoadDouble(doubles + 16);
  stats->l2 = LoadDouble(doubles + 24);
  return in.Varint("stats", &stats->finite_count) && in.Varint("stats", &stats->nan_count) &&
         in.Varint("stats", &stats->pos_inf_count) && in.Varint("stats", &stats->neg_inf_count);
}

}  // namespace op_payload_internal

// One `arg` (§5.3): kind, name, body. Unknown kinds, dtypes, flags and out-of-range dims are
// damage, worded with `where`.
template <class Errors>
[[gnu::always_inline]] inline bool ReadArg(PayloadCursor<Errors>& in, ArgWhere where,
                                           ArgTarget target, ArgView* arg) {
  uint8_t kind = 0;
  if (!in.U8("arg kind", &kind)) return false;
  arg->name_at = in.pos();
  if (!in.Id("argument name", &arg->name)) return false;
  arg->kind = static_cast<ArgKind>(kind);
  arg->body = in.pos();
  // Tensors first (most arguments are), and one copy of the shape reading for the four kinds
  // that have one. An if-chain, not a switch: the raw comparison reads two arguments per slot,
  // and the switch's jump table cost it 3 M mispredicted branches per 1 M ops (callgrind).
  const bool tensor = arg->kind == ArgKind::kTensor;
  if (tensor || arg->kind == ArgKind::kAlias || arg->kind == ArgKind::kUninit ||
      arg->kind == ArgKind::kOpaque || arg->kind == ArgKind::kUnread) {
    if (!op_payload_internal::ReadShape(in, where, target.shape, arg)) return false;
    if (arg->kind == ArgKind::kUnread) {
      uint8_t reason = 0;
      if (!in.U8("unread reason", &reason) || !in.Id("unread detail", &arg->text)) return false;
      // A reason this upguard does not know (a newer writer's) is still a tensor not read.
      arg->unread = reason > static_cast<uint8_t>(kMaxUnreadReason)
                        ? UnreadReason::kUnknown
                        : static_cast<UnreadReason>(reason);
    }
    if (tensor) {
      if (!in.Fixed("digest", kDigestBytes, &arg->digest) || !in.U8("flags", &arg->flags)) {
        return false;
      }
      const uint8_t flags = arg->flags;
      if (__builtin_expect(flags != 0 && flags != kArgFlagHasStats &&
                               flags != (kArgFlagHasStats | kArgFlagStatsShared),
                           0)) {
        return in.Fail([=](const auto&) {
          return where.str() + ": reserved bits set in flags byte " + std::to_string(flags);
        });
      }
      if (arg->stats_here() && !op_payload_internal::ReadStats(in, target.stats)) return false;
    }
  } else if (arg->kind == ArgKind::kScalar) {
    if (!in.Id("scalar text", &arg->text)) return false;
  } else if (arg->kind != ArgKind::kNone) {
    return in.Fail([=](const auto&) {
      return where.str() + ": unknown arg kind " + std::to_string(kind) +
             " (written by a newer upguard?)";
    });
  }
  arg->end = in.pos();
  return true;
}

// The optional labels block after the outputs (§5.3.2) of op `op` (its name id) at `seq`: calls
// on_label(slot, label) for each. No bytes left: no labels. Bytes after the block are later
// fields, left unread.
template <class Errors, class OnLabel>
[[gnu::always_inline]] inline bool ReadLabels(PayloadCursor<Errors>& in, StringId op, uint64_t seq,
                                              uint64_t inputs, uint64_t outputs,
                                              OnLabel&& on_label) {
  if (in.remaining() == 0) return true;
  uint64_t count = 0;
  if (!in.Count("labels", &count)) return false;
  const uint64_t slots = inputs + outputs;
  uint64_t next_slot = 0;  // slots strictly increase
  for (uint64_t label_idx = 0; label_idx < count; ++label_idx) {
    uint64_t slot = 0;
    StringId label = kEmptyString;
    if (!in.Varint("label slot", &slot) || !in.Varint32("label", &label)) return false;
    if (__builtin_expect(slot >= slots, 0)) {
      return in.Fail([=](const auto& errors) {
        return "labels of " + errors.OpWhere(op, seq) + ": slot " + std::to_string(slot) +
               " is not an argument (" + std::to_string(inputs) + " inputs, " +
               std::to_string(outputs) + " outputs)";
      });
    }
    if (__builtin_expect(slot < next_slot, 0)) {
      return in.Fail([=](const auto& errors) {
        return "labels of " + errors.OpWhere(op, seq) + ": slot " + std::to_string(slot) +
               " follows slot " + std::to_string(next_slot - 1) + " (slots must increase)";
      });
    }
    if (__builtin_expect(!in.id_defined(label), 0)) {
      return in.errors().Undefined(label, [=](const auto& errors) {
        return "in the label of slot " + std::to_string(slot) + " of " + errors.OpWhere(op, seq);
      });
    }
    if (__builtin_expect(label == kEmptyString, 0)) {
      return in.Fail([=](const auto& errors) {
        return "labels of " + errors.OpWhere(op, seq) + ": slot " + std::to_string(slot) +
               " has label string id 0 (the empty string is no label)";
      });
    }
    if (!on_label(slot, label)) return false;
    next_slot = slot + 1;
  }
  return true;
}

// The whole payload, in order, handed to `visitor` (see the top of this file).
template <class Errors, class Visitor>
[[gnu::always_inline]] inline bool WalkOp(PayloadCursor<Errors>& in, Visitor& visitor) {
  OpHeader header;
  if (!ReadOpHeader(in, &header) || !visitor.Header(header)) return false;
  uint64_t counts[2] = {0, 0};
  for (const ArgSide side : {ArgSide::kInput, ArgSide::kOutput}) {
    uint64_t& count = counts[static_cast<int>(side)];
    if (!ReadArgCount(in, side, &count) || !visitor.Count(side, count)) return false;
    for (uint64_t arg_idx = 0; arg_idx < count; ++arg_idx) {
      ArgView arg;
      if (!ReadArg(in, ArgWhere{side, arg_idx}, visitor.Target(side, arg_idx), &arg) ||
          !visitor.Arg(side, arg_idx, arg)) {
        return false;
      }
    }
  }
  return visitor.ArgsEnd(in.pos()) &&
         ReadLabels(in, header.op, header.seq, counts[0], counts[1],
                    [&](uint64_t slot, StringId label) { return visitor.Label(slot, label); });
}

// The payload after its seq, unchecked: two payloads equal after it are the same op but for its
// position (an inserted op shifts every later seq).
inline std::string_view AfterOpSeq(std::string_view payload) {
  size_t len = 0;
  while (len < payload.size() && (static_cast<uint8_t>(payload[len]) & 0x80) != 0) ++len;
  return payload.substr(std::min(len + 1, payload.size()));
}

}  // namespace upguard
