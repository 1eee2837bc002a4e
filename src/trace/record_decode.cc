// Decoding half of record_codec.h. Every read is bounds-checked against the payload; counts are
// checked against the bytes left before anything is resized, so a damaged count cannot make the
// reader allocate more than the payload could describe.
#include <limits>
#include <string>

#include "trace/format.h"
#include "trace/record_codec.h"
#include "trace/varint.h"

namespace upguard {
namespace {

// A cursor over one payload that records the first error it meets. The success paths are small
// and inline (one-byte varints dominate); everything that builds an error message is out of line.
class Decoder {
 public:
  Decoder(std::string_view payload, const char* record, RecordError* error)
      : p_(payload.data()), end_(payload.data() + payload.size()), record_(record), error_(error) {}

  // Sets the error ("malformed <record> record", detail) and returns false.
  [[gnu::noinline, gnu::cold]] bool Fail(std::string detail) {
    error_->reason = std::string("malformed ") + record_ + " record";
    error_->detail = std::move(detail);
    return false;
  }
  [[gnu::noinline, gnu::cold]] bool FailEarlyEnd(const char* field) {
    return Fail(std::string("payload ends inside ") + field);
  }

  bool U8(const char* field, uint8_t* value) {
    if (__builtin_expect(p_ == end_, 0)) return FailEarlyEnd(field);
    *value = static_cast<uint8_t>(*p_++);
    return true;
  }
  bool Varint(const char* field, uint64_t* value) {
    if (__builtin_expect(p_ != end_ && (*p_ & 0x80) == 0, 1)) {
      *value = static_cast<uint8_t>(*p_++);
      return true;
    }
    return VarintSlow(field, value);
  }
  bool Varint32(const char* field, uint32_t* value) {
    uint64_t wide = 0;
    if (!Varint(field, &wide)) return false;
    if (__builtin_expect(wide > std::numeric_limits<uint32_t>::max(), 0)) {
      return FailExceeds32(field, wide);
    }
    *value = static_cast<uint32_t>(wide);
    return true;
  }
  // A count of items that each take at least one byte: bounded by the bytes left.
  bool Count(const char* field, uint64_t* value) {
    if (!Varint(field, value)) return false;
    if (__builtin_expect(*value > remaining(), 0)) return FailCount(field, *value);
    return true;
  }
  // A string id, which must be below `limit` (the strings defined before this record).
  bool Id(const char* field, size_t limit, StringId* id) {
    if (!Varint32(field, id)) return false;
    if (__builtin_expect(*id < limit, 1)) return true;
    return FailUndefined(field, *id);
  }
  bool Fixed(const char* field, size_t size, const char** bytes) {
    if (__builtin_expect(remaining() < size, 0)) return FailEarlyEnd(field);
    *bytes = p_;
    p_ += size;
    return true;
  }
  bool Double(const char* field, double* value) {
    const char* bytes = nullptr;
    if (!Fixed(field, 8, &bytes)) return false;
    *value = LoadDouble(bytes);
    return true;
  }
  bool Digest(const char* field, Digest128* digest) {
    const char* bytes = nullptr;
    if (!Fixed(field, kDigestBytes, &bytes)) return false;
    *digest = LoadDigest(bytes);
    return true;
  }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  std::string_view Rest() const { return std::string_view(p_, remaining()); }
  // Sets the error ("undefined string id <id>", detail) and returns false.
  [[gnu::noinline, gnu::cold]] bool FailUndefined(StringId id, std::string detail) {
    error_->reason = "undefined string id " + std::to_string(id);
    error_->detail = std::move(detail);
    return false;
  }

 private:
  [[gnu::noinline]] bool VarintSlow(const char* field, uint64_t* value) {
    if (DecodeVarint(&p_, end_, value)) return true;
    return end_ - p_ < static_cast<ptrdiff_t>(kMaxVarintBytes)
               ? FailEarlyEnd(field)
               : Fail(std::string("bad varint in ") + field);
  }
  [[gnu::noinline, gnu::cold]] bool FailExceeds32(const char* field, uint64_t wide) {
    return Fail(std::string(field) + " " + std::to_string(wide) + " exceeds 32 bits");
  }
  [[gnu::noinline, gnu::cold]] bool FailCount(const char* field, uint64_t value) {
    return Fail(std::string(field) + " " + std::to_string(value) + " exceeds the payload");
  }
  [[gnu::noinline, gnu::cold]] bool FailUndefined(const char* field, StringId id) {
    return FailUndefined(id, std::string("in ") + field);
  }

  const char* p_;
  const char* end_;
  const char* record_;
  RecordError* error_;
};

// Which argument is being decoded; turned into text only for an error message.
struct ArgWhere {
  const char* side;  // "input" or "output"
  uint64_t index;
  std::string str() const { return std::string(side) + " " + std::to_string(index); }
};

bool DecodeShape(Decoder& in, const ArgWhere& where, ArgRecord* arg) {
  uint8_t dtype = 0;
  if (!in.U8("dtype", &dtype)) return false;
  if (dtype > kMaxDType) {
    return in.Fail(where.str() + ": unknown dtype " + std::to_string(dtype) +
                   " (written by a newer upguard?)");
  }
  arg->dtype = static_cast<DType>(dtype);
  uint64_t ndim;
  if (!in.Count("ndim", &ndim)) return false;
  arg->shape.resize(ndim);
  for (uint64_t dim_idx = 0; dim_idx < ndim; ++dim_idx) {
    uint64_t dim = 0;
    if (!in.Varint("dims", &dim)) return false;
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return in.Fail(where.str() + ": dim " + std::to_string(dim) + " is 2^63 or more");
    }
    arg->shape[dim_idx] = static_cast<int64_t>(dim);
  }
  return true;
}

bool DecodeStats(Decoder& in, TensorStats* stats) {
  return in.Double("stats", &stats->min) && in.Double("stats", &stats->max) &&
         in.Double("stats", &stats->mean) && in.Double("stats", &stats->l2) &&
         in.Varint("stats", &stats->finite_count) && in.Varint("stats", &stats->nan_count) &&
         in.Varint("stats", &stats->pos_inf_count) && in.Varint("stats", &stats->neg_inf_count);
}

bool DecodeArg(Decoder& in, const StringTable& strings, size_t id_limit, const ArgWhere& where,
               ArgRecord* arg) {
  uint8_t kind = 0;
  if (!in.U8("arg kind", &kind) || !in.Id("argument name", id_limit, &arg->name)) return false;
  arg->kind = static_cast<ArgKind>(kind);
  arg->dtype = DType::kInvalid;
  arg->shape.clear();
  arg->digest = Digest128{};
  arg->has_stats = false;
  arg->stats_shared = false;
  arg->stats = TensorStats{};
  arg->text = kEmptyString;
  arg->label = kEmptyString;  // set by the labels block, if any
  switch (arg->kind) {
    case ArgKind::kTensor: {
      uint8_t flags = 0;
      if (!DecodeShape(in, where, arg) || !in.Digest("digest", &arg->digest) ||
          !in.U8("flags", &flags)) {
        return false;
      }
      if ((flags & ~(kArgFlagHasStats | kArgFlagStatsShared)) != 0 ||
          flags == kArgFlagStatsShared) {
        return in.Fail(where.str() + ": reserved bits set in flags byte " + std::to_string(flags));
      }
      arg->has_stats = (flags & kArgFlagHasStats) != 0;
      arg->stats_shared = (flags & kArgFlagStatsShared) != 0;
      return !arg->has_stats || arg->stats_shared || DecodeStats(in, &arg->stats);
    }
    case ArgKind::kScalar: {
      if (!in.Id("scalar text", id_limit, &arg->text)) return false;
      arg->digest = strings.TextDigest(arg->text);
      return true;
    }
    case ArgKind::kAlias:
    case ArgKind::kUninit:
    case ArgKind::kOpaque:
      return DecodeShape(in, where, arg);
    case ArgKind::kNone:
      return true;
  }
  return in.Fail(where.str() + ": unknown arg kind " + std::to_string(kind) +
                 " (written by a newer upguard?)");
}

bool DecodeArgs(Decoder& in, const StringTable& strings, size_t id_limit, const char* side,
                std::vector<ArgRecord>* args) {
  uint64_t count;
  if (!in.Count(side, &count)) return false;
  args->resize(count);
  for (uint64_t arg_idx = 0; arg_idx < count; ++arg_idx) {
    if (!DecodeArg(in, strings, id_limit, ArgWhere{side, arg_idx}, &(*args)[arg_idx])) {
      return false;
    }
  }
  return true;
}

// "aten::mul_ (seq 4)": the op whose labels block is damaged, for its message.
[[gnu::noinline, gnu::cold]] std::string OpWhere(const OpRecord& op, const StringTable& strings) {
  return strings.Get(op.op) + " (seq " + std::to_string(op.seq) + ")";
}

// The optional labels block after the outputs (§5.3.2). Bytes after it are later fields.
bool DecodeLabels(Decoder& in, const StringTable& strings, size_t id_limit, OpRecord* op) {
  if (in.remaining() == 0) return true;
  uint64_t count = 0;
  if (!in.Count("labels", &count)) return false;
  const size_t inputs = op->inputs.size();
  const size_t slots = inputs + op->outputs.size();
  uint64_t next_slot = 0;  // slots strictly increase
  for (uint64_t label_idx = 0; label_idx < count; ++label_idx) {
    uint64_t slot = 0;
    StringId label = kEmptyString;
    if (!in.Varint("label slot", &slot) || !in.Varint32("label", &label)) return false;
    if (slot >= slots) {
      return in.Fail("labels of " + OpWhere(*op, strings) + ": slot " + std::to_string(slot) +
                     " is not an argument (" + std::to_string(inputs) + " inputs, " +
                     std::to_string(op->outputs.size()) + " outputs)");
    }
    if (slot < next_slot) {
      return in.Fail("labels of " + OpWhere(*op, strings) + ": slot " + std::to_string(slot) +
                     " follows slot " + std::to_string(next_slot - 1) + " (slots must increase)");
    }
    if (label >= id_limit) {
      return in.FailUndefined(
          label, "in the label of slot " + std::to_string(slot) + " of " + OpWhere(*op, strings));
    }
    if (label == kEmptyString) {
      return in.Fail("labels of " + OpWhere(*op, strings) + ": slot " + std::to_string(slot) +
                     " has label string id 0 (the empty string is no label)");
    }
    (slot < inputs ? op->inputs[slot] : op->outputs[slot - inputs]).label = label;
    next_slot = slot + 1;
  }
  return true;
}

}  // namespace

bool DecodeOp(std::string_view payload, const StringTable& strings, OpRecord* op,
              RecordError* error) {
  return DecodeOp(payload, strings, strings.size(), op, error);
}

bool DecodeOp(std::string_view payload, const StringTable& strings, size_t id_limit, OpRecord* op,
              RecordError* error) {
  Decoder in(payload, "Op", error);
  op->collective.reset();  // a reused record: only a Collective record sets it
  uint8_t phase = 0;
  if (!in.Varint("seq", &op->seq) || !in.Varint32("step", &op->step) || !in.U8("phase", &phase)) {
    return false;
  }
  if (phase > static_cast<uint8_t>(kMaxPhase)) {
    return in.Fail("unknown phase " + std::to_string(phase) + " (written by a newer upguard?)");
  }
  op->phase = static_cast<Phase>(phase);
  return in.Varint32("depth", &op->depth) && in.Id("op name", id_limit, &op->op) &&
         in.Id("module", id_limit, &op->module) && in.Id("call site", id_limit, &op->call_site) &&
         in.Id("node", id_limit, &op->node) &&
         DecodeArgs(in, strings, id_limit, "input", &op->inputs) &&
         DecodeArgs(in, strings, id_limit, "output", &op->outputs) &&
         DecodeLabels(in, strings, id_limit, op);
}

bool DecodeOpPrefix(std::string_view payload, uint64_t* seq, uint32_t* step, RecordError* error) {
  const char* p = payload.data();
  const char* const end = p + payload.size();
  uint64_t wide = 0;
  if (DecodeVarint(&p, end, seq) && DecodeVarint(&p, end, &wide) &&
      wide <= std::numeric_limits<uint32_t>::max()) {
    *step = static_cast<uint32_t>(wide);
    return true;
  }
  Decoder in(payload, "Op", error);  // again, for the error DecodeOp gives
  return in.Varint("seq", seq) && in.Varint32("step", step);
}

bool DecodeCollective(std::string_view payload, const StringTable& strings, size_t id_limit,
                      uint64_t* op_seq, CollectiveInfo* info, RecordError* error) {
  Decoder in(payload, "Collective", error);
  uint64_t rank_count = 0;
  if (!in.Varint("op_seq", op_seq) || !in.Id("group", id_limit, &info->group) ||
      !in.Varint32("group_rank", &info->group_rank) ||
      !in.Varint32("group_size", &info->group_size) || !in.Count("rank_count", &rank_count)) {
    return false;
  }
  info->ranks.resize(rank_count);
  for (uint64_t rank_idx = 0; rank_idx < rank_count; ++rank_idx) {
    uint32_t rank = 0;
    if (!in.Varint32("ranks", &rank)) return false;
    if (rank > static_cast<uint32_t>(std::numeric_limits<int32_t>::max())) {
      return in.Fail("rank " + std::to_string(rank) + " is 2^31 or more");
    }
    info->ranks[rank_idx] = static_cast<int32_t>(rank);
  }
  uint8_t flags = 0;
  if (!in.Varint("seq", &info->seq) || !in.U8("flags", &flags)) return false;
  if ((flags & ~kCollectiveFlagCompleted) != 0) {
    return in.Fail("reserved bits set in flags byte " + std::to_string(flags));
  }
  info->completed = (flags & kCollectiveFlagCompleted) != 0;
  if (!in.Varint("ops_before_completion", &info->ops_before_completion) ||
      !DecodeArgs(in, strings, id_limit, "output", &info->outputs)) {
    return false;
  }
  if (!info->completed && !info->outputs.empty()) return in.Fail("outputs without completion");
  for (size_t arg_idx = 0; arg_idx < info->outputs.size(); ++arg_idx) {
    if (info->outputs[arg_idx].stats_shared) {
      return in.Fail("output " + std::to_string(arg_idx) + ": shared statistics");
    }
  }
  return true;
}

bool DecodeString(std::string_view payload, StringId* id, std::string_view* text,
                  RecordError* error) {
  Decoder in(payload, "String", error);
  if (!in.Varint32("string id", id)) return false;
  *text = in.Rest();
  return true;
}

bool DecodeStepEnd(std::string_view payload, StepEndRecord* step_end, RecordError* error) {
  Decoder in(payload, "StepEnd", error);
  return in.Varint32("step", &step_end->step) && in.Varint("op count", &step_end->op_count) &&
         in.Digest("digest", &step_end->digest);
}

bool DecodeEnd(std::string_view payload, uint64_t* op_count, RecordError* error) {
  Decoder in(payload, "End", error);
  return in.Varint("op count", op_count);
}

}  // namespace upguard
