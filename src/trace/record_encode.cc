// Encoding half of record_codec.h.
#include <algorithm>
#include <string>

#include "trace/crc32c.h"
#include "trace/format.h"
#include "trace/record_codec.h"
#include "trace/shared_stats.h"
#include "trace/varint.h"

namespace upguard {
namespace {

// Upper bounds in bytes, used to size the buffer once per op so the encoder below can write
// through a raw pointer with no per-field bounds checks or appends.
constexpr size_t kStatsMaxBytes = 4 * 8 + 4 * kMaxVarintBytes;
constexpr size_t kOpFixedMaxBytes = 8 * kMaxVarintBytes + 1 + 2 * kMaxVarintBytes;

size_t ArgMaxBytes(const ArgRecord& arg) {
  return 1 + 2 * kMaxVarintBytes + 1 + arg.shape.size() * kMaxVarintBytes + kDigestBytes + 1 +
         kStatsMaxBytes;
}

// `record` names what is written in messages: "op" or "collective".
Status ArgError(const char* record, const char* side, size_t arg_idx, const std::string& what) {
  return InvalidArgument(std::string("cannot write ") + record + ": " + side + " " +
                         std::to_string(arg_idx) + ": " + what);
}

Status CheckId(StringId id, const StringTable& strings, const char* what,
               const char* record = "op") {
  if (id < strings.size()) return Status::Ok();
  return InvalidArgument(std::string("cannot write ") + record + ": " + what + " string id " +
                         std::to_string(id) + " was not interned by this writer");
}

Status CheckArg(const ArgRecord& arg, const StringTable& strings, const char* side, size_t arg_idx,
                const char* record = "op") {
  RETURN_IF_ERROR(CheckId(arg.name, strings, "argument name", record));
  RETURN_IF_ERROR(CheckId(arg.label, strings, "label", record));
  switch (arg.kind) {
    case ArgKind::kScalar:
      return CheckId(arg.text, strings, "scalar text", record);
    case ArgKind::kNone:
      return Status::Ok();
    case ArgKind::kUnread:
      RETURN_IF_ERROR(CheckId(arg.text, strings, "unread detail", record));
      if (static_cast<uint8_t>(arg.unread) > static_cast<uint8_t>(kMaxUnreadReason)) {
        return ArgError(record, side, arg_idx,
                        "unknown unread reason " + std::to_string(static_cast<int>(arg.unread)));
      }
      [[fallthrough]];
    case ArgKind::kTensor:
    case ArgKind::kAlias:
    case ArgKind::kUninit:
    case ArgKind::kOpaque:
      if (static_cast<uint8_t>(arg.dtype) > kMaxDType) {
        return ArgError(record, side, arg_idx,
                        "unknown dtype " + std::to_string(static_cast<int>(arg.dtype)));
      }
      for (int64_t dim : arg.shape) {
        if (dim < 0) return ArgError(record, side, arg_idx, "negative dim " + std::to_string(dim));
      }
      return Status::Ok();
  }
  return ArgError(record, side, arg_idx,
                  "unknown arg kind " + std::to_string(static_cast<int>(arg.kind)));
}

// Everything EncodeOp refuses, checked before a byte is written.
// Whether CheckArg would pass, without a Status per field: the path every recorded op takes.
bool ArgValid(const ArgRecord& arg, size_t strings) {
  if (arg.name >= strings || arg.label >= strings) return false;
  switch (arg.kind) {
    case ArgKind::kScalar:
      return arg.text < strings;
    case ArgKind::kNone:
      return true;
    case ArgKind::kUnread:
      if (arg.text >= strings || arg.unread > kMaxUnreadReason) return false;
      [[fallthrough]];
    case ArgKind::kTensor:
    case ArgKind::kAlias:
    case ArgKind::kUninit:
    case ArgKind::kOpaque:
      if (static_cast<uint8_t>(arg.dtype) > kMaxDType) return false;
      for (int64_t dim : arg.shape) {
        if (dim < 0) return false;
      }
      return true;
  }
  return false;
}

bool OpValid(const OpRecord& op, size_t strings) {
  if (static_cast<uint8_t>(op.phase) > static_cast<uint8_t>(kMaxPhase) || op.op >= strings ||
      op.module >= strings || op.call_site >= strings || op.node >= strings) {
    return false;
  }
  for (const ArgRecord& arg : op.inputs) {
    if (!ArgValid(arg, strings)) return false;
  }
  for (const ArgRecord& arg : op.outputs) {
    if (!ArgValid(arg, strings)) return false;
  }
  return true;
}

Status CheckOp(const OpRecord& op, const StringTable& strings) {
  if (OpValid(op, strings.size())) return Status::Ok();
  if (static_cast<uint8_t>(op.phase) > static_cast<uint8_t>(kMaxPhase)) {
    return InvalidArgument("cannot write op: unknown phase " +
                           std::to_string(static_cast<int>(op.phase)));
  }
  RETURN_IF_ERROR(CheckId(op.op, strings, "op name"));
  RETURN_IF_ERROR(CheckId(op.module, strings, "module"));
  RETURN_IF_ERROR(CheckId(op.call_site, strings, "call site"));
  RETURN_IF_ERROR(CheckId(op.node, strings, "node"));
  for (size_t arg_idx = 0; arg_idx < op.inputs.size(); ++arg_idx) {
    RETURN_IF_ERROR(CheckArg(op.inputs[arg_idx], strings, "input", arg_idx));
  }
  for (size_t arg_idx = 0; arg_idx < op.outputs.size(); ++arg_idx) {
    RETURN_IF_ERROR(CheckArg(op.outputs[arg_idx], strings, "output", arg_idx));
  }
  return Status::Ok();
}

char* PutVarint(uint64_t value, char* p) { return p + EncodeVarint(value, p); }

char* PutShape(const ArgRecord& arg, char* p) {
  *p++ = static_cast<char>(arg.dtype);
  p = PutVarint(arg.shape.size(), p);
  for (int64_t dim : arg.shape) p = PutVarint(static_cast<uint64_t>(dim), p);
  return p;
}

char* PutDouble(double value, char* p) {
  StoreDouble(value, p);
  return p + 8;
}

// Precondition: CheckArg passed and ArgMaxBytes(arg) bytes are free at p.
char* PutArg(const ArgRecord& arg, SharedStats* shared, char* p) {
  *p++ = static_cast<char>(arg.kind);
  p = PutVarint(arg.name, p);
  switch (arg.kind) {
    case ArgKind::kTensor: {
      p = PutShape(arg, p);
      StoreDigest(arg.digest, p);
      p += kDigestBytes;
      if (!arg.has_stats) {
        *p++ = 0;
        return p;
      }
      if (shared != nullptr && shared->Share(arg)) {
        *p++ = static_cast<char>(kArgFlagHasStats | kArgFlagStatsShared);
        return p;
      }
      *p++ = static_cast<char>(kArgFlagHasStats);
      const TensorStats& stats = arg.stats;
      for (double value : {stats.min, stats.max, stats.mean, stats.l2}) p = PutDouble(value, p);
      for (uint64_t count :
           {stats.finite_count, stats.nan_count, stats.pos_inf_count, stats.neg_inf_count}) {
        p = PutVarint(count, p);
      }
      return p;
    }
    case ArgKind::kScalar:
      return PutVarint(arg.text, p);
    case ArgKind::kAlias:
    case ArgKind::kUninit:
    case ArgKind::kOpaque:
      return PutShape(arg, p);
    case ArgKind::kUnread:
      p = PutShape(arg, p);
      *p++ = static_cast<char>(arg.unread);
      return PutVarint(arg.text, p);
    case ArgKind::kNone:
      return p;
  }
  return p;
}

// The labels block (§5.3.2), only when an argument has a label: traces without labels keep
// the bytes they had before labels existed. Precondition: LabelsMaxBytes(op) bytes are free.
size_t LabelsMaxBytes(const OpRecord& op) {
  return (1 + 2 * (op.inputs.size() + op.outputs.size())) * kMaxVarintBytes;
}

char* PutLabels(const OpRecord& op, char* p) {
  uint64_t count = 0;
  for (const auto* args : {&op.inputs, &op.outputs}) {
    for (const ArgRecord& arg : *args) count += arg.label != kEmptyString;
  }
  if (count == 0) return p;
  p = PutVarint(count, p);
  uint64_t slot = 0;  // inputs first, then outputs
  for (const auto* args : {&op.inputs, &op.outputs}) {
    for (const ArgRecord& arg : *args) {
      if (arg.label != kEmptyString) {
        p = PutVarint(slot, p);
        p = PutVarint(arg.label, p);
      }
      ++slot;
    }
  }
  return p;
}

}  // namespace

void BeginFrame(std::string* frame) {
  frame->clear();
  frame->append(kFrameHeaderBytes, '\0');
}

void FinishFrame(RecordType type, std::string* frame) {
  const size_t payload_bytes = frame->size() - kFrameHeaderBytes;
  StoreLe32(static_cast<uint32_t>(payload_bytes), &(*frame)[0]);
  (*frame)[4] = static_cast<char>(type);
  AppendFixed32(Crc32c(frame->data(), frame->size()), frame);
}

Status EncodeOp(const OpRecord& op, uint64_t seq, const StringTable& strings, std::string* out,
                SharedStats* shared) {
  RETURN_IF_ERROR(CheckOp(op, strings));
  size_t max_bytes = kOpFixedMaxBytes + LabelsMaxBytes(op);
  for (const ArgRecord& arg : op.inputs) max_bytes += ArgMaxBytes(arg);
  for (const ArgRecord& arg : op.outputs) max_bytes += ArgMaxBytes(arg);
  const size_t start = out->size();
  out->resize(start + max_bytes);
  char* const begin = &(*out)[start];
  char* p = begin;
  for (uint64_t field : {seq, uint64_t{op.step}}) p = PutVarint(field, p);
  *p++ = static_cast<char>(op.phase);
  for (uint64_t field : {uint64_t{op.depth}, uint64_t{op.op}, uint64_t{op.module},
                         uint64_t{op.call_site}, uint64_t{op.node}, uint64_t{op.inputs.size()}}) {
    p = PutVarint(field, p);
  }
  for (const ArgRecord& arg : op.inputs) p = PutArg(arg, shared, p);
  p = PutVarint(op.outputs.size(), p);
  for (const ArgRecord& arg : op.outputs) p = PutArg(arg, shared, p);
  p = PutLabels(op, p);
  const size_t payload_bytes = static_cast<size_t>(p - begin);
  out->resize(start + payload_bytes);
  if (payload_bytes > kMaxPayloadBytes) {
    out->resize(start);
    if (shared != nullptr) shared->Reset();  // it saw statistics that are not written
    return InvalidArgument("cannot write op " + strings.Get(op.op) + ": its record exceeds " +
                           std::to_string(kMaxPayloadBytes) + " bytes");
  }
  return Status::Ok();
}

Status EncodeCollective(uint64_t op_seq, const CollectiveInfo& info, const StringTable& strings,
                        std::string* out) {
  RETURN_IF_ERROR(CheckId(info.group, strings, "group", "collective"));
  for (int32_t rank : info.ranks) {
    if (rank < 0) return InvalidArgument("cannot write collective: rank " + std::to_string(rank));
  }
  if (!info.completed && !info.outputs.empty()) {
    return InvalidArgument("cannot write collective: " + std::to_string(info.outputs.size()) +
                           " outputs, but it did not complete");
  }
  size_t max_bytes = (8 + info.ranks.size()) * kMaxVarintBytes + 1;
  for (const ArgRecord& arg : info.outputs) max_bytes += ArgMaxBytes(arg);
  for (size_t arg_idx = 0; arg_idx < info.outputs.size(); ++arg_idx) {
    RETURN_IF_ERROR(CheckArg(info.outputs[arg_idx], strings, "output", arg_idx, "collective"));
  }
  const size_t start = out->size();
  out->resize(start + max_bytes);
  char* const begin = &(*out)[start];
  char* p = begin;
  for (uint64_t field : {op_seq, uint64_t{info.group}, uint64_t{info.group_rank},
                         uint64_t{info.group_size}, uint64_t{info.ranks.size()}}) {
    p = PutVarint(field, p);
  }
  for (int32_t rank : info.ranks) p = PutVarint(static_cast<uint64_t>(rank), p);
  p = PutVarint(info.seq, p);
  *p++ = static_cast<char>(info.completed ? kCollectiveFlagCompleted : 0);
  p = PutVarint(info.ops_before_completion, p);
  p = PutVarint(info.outputs.size(), p);
  for (const ArgRecord& arg : info.outputs) p = PutArg(arg, /*shared=*/nullptr, p);
  const size_t payload_bytes = static_cast<size_t>(p - begin);
  out->resize(start + payload_bytes);
  if (payload_bytes > kMaxPayloadBytes) {
    out->resize(start);
    return InvalidArgument("cannot write collective: its record exceeds " +
                           std::to_string(kMaxPayloadBytes) + " bytes");
  }
  return Status::Ok();
}

void EncodeString(StringId id, std::string_view text, std::string* out) {
  AppendVarint(id, out);
  out->append(text.data(), text.size());
}

void EncodeStepEnd(const StepEndRecord& step_end, std::string* out) {
  AppendVarint(step_end.step, out);
  AppendVarint(step_end.op_count, out);
  AppendDigest(step_end.digest, out);
  // Appended fields (§5.4): flags, when not 0 or when the unread tally follows it.
  if (step_end.flags == 0 && step_end.unread.empty()) return;
  AppendVarint(step_end.flags, out);
  if (step_end.unread.empty()) return;
  AppendVarint(step_end.unread.size(), out);
  for (const UnreadCount& count : step_end.unread) {
    out->push_back(static_cast<char>(count.reason));
    AppendVarint(count.detail.size(), out);
    out->append(count.detail);
    AppendVarint(count.ops, out);
    AppendVarint(count.tensors, out);
  }
}

void EncodeEnd(uint64_t op_count, std::string* out) { AppendVarint(op_count, out); }

void EncodeStopped(const StoppedRecord& stopped, std::string* out) {
  AppendVarint(stopped.step, out);
  out->push_back(static_cast<char>(stopped.reason));
  out->append(stopped.message.data(), std::min(stopped.message.size(), kMaxStopMessageBytes));
}

std::string RecordTypeName(uint8_t type) {
  switch (static_cast<RecordType>(type)) {
    case RecordType::kRunMeta:
      return "RunMeta";
    case RecordType::kString:
      return "String";
    case RecordType::kOp:
      return "Op";
    case RecordType::kStepEnd:
      return "StepEnd";
    case RecordType::kEnd:
      return "End";
    case RecordType::kCollective:
      return "Collective";
    case RecordType::kStopped:
      return "Stopped";
  }
  return "type " + std::to_string(type);
}

}  // namespace upguard
