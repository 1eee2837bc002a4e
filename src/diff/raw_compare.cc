#include "diff/raw_compare.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "trace/format.h"
#include "trace/record_codec.h"
#include "trace/varint.h"

namespace upguard {
namespace {

constexpr StringId kNoString = std::numeric_limits<StringId>::max();

// The payload after its first field, the seq varint (an inserted op shifts every later seq).
std::string_view AfterSeq(std::string_view payload) {
  size_t len = 0;
  while (len < payload.size() && (static_cast<uint8_t>(payload[len]) & 0x80) != 0) ++len;
  return payload.substr(std::min(len + 1, payload.size()));
}

// Reads one Op payload field by field with DecodeOp's checks (record_decode.cc), none looser:
// any read that DecodeOp would fail fails here.
class Cursor {
 public:
  Cursor(std::string_view payload, uint32_t id_limit)
      : p_(payload.data()), end_(payload.data() + payload.size()), id_limit_(id_limit) {}

  bool U8(uint8_t* value) {
    if (p_ == end_) return false;
    *value = static_cast<uint8_t>(*p_++);
    return true;
  }
  [[gnu::always_inline]] bool Varint(uint64_t* value) {
    if (__builtin_expect(p_ != end_ && (*p_ & 0x80) == 0, 1)) {
      *value = static_cast<uint8_t>(*p_++);
      return true;
    }
    return DecodeVarint(&p_, end_, value);
  }
  bool Varint32(uint32_t* value) {
    uint64_t wide = 0;
    if (!Varint(&wide) || wide > std::numeric_limits<uint32_t>::max()) return false;
    *value = static_cast<uint32_t>(wide);
    return true;
  }
  // A count of items of at least one byte each.
  bool Count(uint64_t* value) { return Varint(value) && *value <= Remaining(); }
  bool Id(StringId* id) { return Varint32(id) && *id < id_limit_; }
  bool Bytes(size_t size, const char** bytes) {
    if (Remaining() < size) return false;
    *bytes = p_;
    p_ += size;
    return true;
  }
  size_t Remaining() const { return static_cast<size_t>(end_ - p_); }
  const char* pos() const { return p_; }
  // The next bytes equal [begin, end) (another payload's bytes); moves past them.
  bool Same(const char* begin, const char* end) {
    const size_t size = static_cast<size_t>(end - begin);
    if (Remaining() < size) return false;
    if (size <= 8) {  // most spans between ids are a byte or two: no call
      for (size_t idx = 0; idx < size; ++idx) {
        if (p_[idx] != begin[idx]) return false;
      }
    } else if (std::memcmp(p_, begin, size) != 0) {
      return false;
    }
    p_ += size;
    return true;
  }

 private:
  const char* p_;
  const char* end_;
  uint32_t id_limit_;
};

// Reads a dtype and shape from both; true when both are valid and equal.
[[gnu::always_inline]] inline bool SameShape(Cursor& a, Cursor& b) {
  uint8_t dtype_a = 0, dtype_b = 0;
  uint64_t ndim_a = 0, ndim_b = 0;
  if (!a.U8(&dtype_a) || !b.U8(&dtype_b) || dtype_a > kMaxDType || dtype_a != dtype_b ||
      !a.Count(&ndim_a) || !b.Count(&ndim_b) || ndim_a != ndim_b) {
    return false;
  }
  for (uint64_t dim_idx = 0; dim_idx < ndim_a; ++dim_idx) {
    uint64_t dim_a = 0, dim_b = 0;
    if (!a.Varint(&dim_a) || !b.Varint(&dim_b) || dim_a != dim_b ||
        dim_a > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return false;
    }
  }
  return true;
}

// DecodeOp's rule for a tensor's flags byte (§5.3).
inline bool ValidFlags(uint8_t flags) {
  return flags == 0 || flags == kArgFlagHasStats ||
         flags == (kArgFlagHasStats | kArgFlagStatsShared);
}

// A tensor's flags and statistics, which the walk does not compare: each side only checked.
[[gnu::always_inline]] inline bool SkipFlagsAndStats(Cursor& in) {
  uint8_t flags = 0;
  if (!in.U8(&flags) || !ValidFlags(flags)) return false;
  if (flags != kArgFlagHasStats) return true;  // none, or shared with an earlier tensor
  const char* doubles = nullptr;
  uint64_t count = 0;
  return in.Bytes(4 * 8, &doubles) && in.Varint(&count) && in.Varint(&count) && in.Varint(&count) &&
         in.Varint(&count);
}

// The labels block after the outputs (trace.md §5.3.2), which the walk does not compare: each
// side only checked, as DecodeOp checks it. `args`: the op's inputs and outputs.
inline bool SkipLabels(Cursor& in, uint64_t args) {
  if (in.Remaining() == 0) return true;
  uint64_t count = 0, slot = 0, next_slot = 0;
  StringId label = kEmptyString;
  if (!in.Count(&count)) return false;
  for (uint64_t label_idx = 0; label_idx < count; ++label_idx) {
    if (!in.Varint(&slot) || slot >= args || slot < next_slot || !in.Id(&label) ||
        label == kEmptyString) {
      return false;
    }
    next_slot = slot + 1;
  }
  return true;
}

// The pair read with A leading: every field is parsed (and checked) in `a`; in `b` only the seq,
// the step and the string ids are, everything between them must be the same bytes as in `a`
// (so it is checked too). Ops whose ignored fields differ fail here and take the slower path.
bool LedEqual(std::string_view payload_a, uint32_t ids_a, std::string_view payload_b,
              uint32_t ids_b, const std::vector<StringId>& b_to_a) {
  Cursor a(payload_a, ids_a), b(payload_b, ids_b);  // locals: kept in registers
  uint64_t wide = 0;
  uint32_t narrow = 0;
  if (!a.Varint(&wide) || !a.Varint32(&narrow) || !b.Varint(&wide) || !b.Varint32(&narrow)) {
    return false;
  }
  const char* span = a.pos();  // bytes of `a` that `b` must repeat
  auto same = [&] { return b.Same(span, a.pos()); };
  // An id in both; `mapped`: B's names the same string as A's.
  auto id = [&](bool mapped) {
    StringId id_a = 0, id_b = 0;
    if (!same() || !a.Id(&id_a) || !b.Id(&id_b) || (mapped && b_to_a[id_b] != id_a)) return false;
    span = a.pos();
    return true;
  };
  uint8_t phase = 0;
  if (!a.U8(&phase) || phase > static_cast<uint8_t>(kMaxPhase) || !a.Varint32(&narrow) ||
      !id(true) || !id(false) || !id(false) || !id(false)) {
    return false;
  }
  uint64_t args = 0;
  for (int side = 0; side < 2; ++side) {  // inputs, then outputs
    uint64_t count = 0;
    if (!a.Count(&count)) return false;
    args += count;
    for (uint64_t arg_idx = 0; arg_idx < count; ++arg_idx) {
      uint8_t kind = 0;
      if (!a.U8(&kind) || !id(false)) return false;
      switch (static_cast<ArgKind>(kind)) {
        case ArgKind::kTensor: {
          uint8_t dtype = 0, flags = 0;
          uint64_t ndim = 0, dim = 0;
          const char* digest = nullptr;
          if (!a.U8(&dtype) || dtype > kMaxDType || !a.Count(&ndim)) return false;
          for (uint64_t dim_idx = 0; dim_idx < ndim; ++dim_idx) {
            if (!a.Varint(&dim) ||
                dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
              return false;
            }
          }
          if (!a.Bytes(kDigestBytes, &digest)) return false;
          if (!a.U8(&flags) || !ValidFlags(flags)) return false;
          if (flags == kArgFlagHasStats) {
            const char* doubles = nullptr;
            if (!a.Bytes(4 * 8, &doubles) || !a.Varint(&wide) || !a.Varint(&wide) ||
                !a.Varint(&wide) || !a.Varint(&wide)) {
              return false;
            }
          }
          break;
        }
        case ArgKind::kScalar:
          if (!id(true)) return false;
          break;
        case ArgKind::kAlias:
        case ArgKind::kUninit:
        case ArgKind::kOpaque: {
          uint8_t dtype = 0;
          uint64_t ndim = 0, dim = 0;
          if (!a.U8(&dtype) || dtype > kMaxDType || !a.Count(&ndim)) return false;
          for (uint64_t dim_idx = 0; dim_idx < ndim; ++dim_idx) {
            if (!a.Varint(&dim) ||
                dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
              return false;
            }
          }
          break;
        }
        case ArgKind::kNone:
          break;
        default:
          return false;
      }
    }
  }
  return same() && SkipLabels(a, args) && SkipLabels(b, args);
}

}  // namespace

void RawComparer::Sync() {
  const size_t both = std::min(a_.size(), b_.size());
  if (common_ == std::min(seen_a_, b_to_a_.size())) {  // all equal so far: look further
    while (common_ < both && a_.Get(common_) == b_.Get(common_)) ++common_;
  }
  if (a_.size() > seen_a_) {  // A's new strings may be some that B defined first
    seen_a_ = a_.size();
    std::vector<StringId> still_unmapped;
    for (StringId id : unmapped_) {
      if (!a_.Find(b_.Get(id), &b_to_a_[id])) still_unmapped.push_back(id);
    }
    unmapped_ = std::move(still_unmapped);
  }
  for (StringId id = static_cast<StringId>(b_to_a_.size()); id < b_.size(); ++id) {
    b_to_a_.push_back(kNoString);
    if (!a_.Find(b_.Get(id), &b_to_a_[id])) unmapped_.push_back(id);
  }
}

bool RawComparer::Equal(std::string_view a, uint32_t ids_a, std::string_view b,
                        uint32_t ids_b) const {
  if (ids_a <= common_ && ids_b <= common_ && AfterSeq(a) == AfterSeq(b)) return true;
  if (LedEqual(a, ids_a, b, ids_b, b_to_a_)) return true;
  Cursor ca(a, ids_a), cb(b, ids_b);
  auto same_id = [&](StringId* id_a, StringId* id_b) {
    return ca.Id(id_a) && cb.Id(id_b) && b_to_a_[*id_b] == *id_a;
  };
  uint64_t wide = 0;
  uint32_t narrow = 0;
  uint8_t phase = 0;
  StringId id_a = 0, id_b = 0;
  // seq, step, phase, depth: checked, not compared.
  auto prefix = [&](Cursor& in) {
    return in.Varint(&wide) && in.Varint32(&narrow) && in.U8(&phase) &&
           phase <= static_cast<uint8_t>(Phase::kOptimizer) && in.Varint32(&narrow);
  };
  if (!prefix(ca) || !prefix(cb)) return false;
  if (!same_id(&id_a, &id_b)) return false;  // the op name
  for (int field = 0; field < 3; ++field) {  // module, call site, node: checked
    if (!ca.Id(&id_a) || !cb.Id(&id_b)) return false;
  }
  uint64_t args = 0;
  for (int side = 0; side < 2; ++side) {  // inputs, then outputs
    uint64_t count_a = 0, count_b = 0;
    if (!ca.Count(&count_a) || !cb.Count(&count_b) || count_a != count_b) return false;
    args += count_a;
    for (uint64_t arg_idx = 0; arg_idx < count_a; ++arg_idx) {
      uint8_t kind_a = 0, kind_b = 0;
      if (!ca.U8(&kind_a) || !cb.U8(&kind_b) || kind_a != kind_b || !ca.Id(&id_a) ||
          !cb.Id(&id_b)) {
        return false;
      }
      switch (static_cast<ArgKind>(kind_a)) {
        case ArgKind::kTensor: {
          const char* digest_a = nullptr;
          const char* digest_b = nullptr;
          if (!SameShape(ca, cb) || !ca.Bytes(kDigestBytes, &digest_a) ||
              !cb.Bytes(kDigestBytes, &digest_b) ||
              std::memcmp(digest_a, digest_b, kDigestBytes) != 0 || !SkipFlagsAndStats(ca) ||
              !SkipFlagsAndStats(cb)) {
            return false;
          }
          break;
        }
        case ArgKind::kScalar:
          if (!same_id(&id_a, &id_b)) return false;
          break;
        case ArgKind::kAlias:
        case ArgKind::kUninit:
        case ArgKind::kOpaque:
          if (!SameShape(ca, cb)) return false;
          break;
        case ArgKind::kNone:
          break;
        default:
          return false;
      }
    }
  }
  // Bytes after the labels are for later format versions: ignored, as DecodeOp does.
  return SkipLabels(ca, args) && SkipLabels(cb, args);
}

bool RawComparer::CollectiveEqual(const RawCollective& a, const RawCollective& b) const {
  uint64_t op_seq = 0;
  CollectiveInfo ca, cb;
  RecordError error;
  if (!DecodeCollective(a.payload, a_, a.strings_before, &op_seq, &ca, &error) ||
      !DecodeCollective(b.payload, b_, b.strings_before, &op_seq, &cb, &error)) {
    return false;
  }
  if (a_.Get(ca.group) != b_.Get(cb.group) || ca.ranks != cb.ranks ||
      ca.group_rank != cb.group_rank || ca.group_size != cb.group_size || ca.seq != cb.seq ||
      ca.completed != cb.completed || ca.outputs.size() != cb.outputs.size()) {
    return false;
  }
  for (size_t arg_idx = 0; arg_idx < ca.outputs.size(); ++arg_idx) {
    const ArgRecord& x = ca.outputs[arg_idx];
    const ArgRecord& y = cb.outputs[arg_idx];
    if (x.kind != y.kind || x.dtype != y.dtype || x.shape != y.shape) return false;
    if (x.kind == ArgKind::kTensor && x.digest != y.digest) return false;
    if (x.kind == ArgKind::kScalar && a_.Get(x.text) != b_.Get(y.text)) return false;
  }
  return true;
}

uint64_t RawComparer::CollectiveLimit(const TraceIndex& a, size_t step_a, const TraceIndex& b,
                                      size_t step_b) const {
  constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
  if (a.steps()[step_a].collectives == 0 && b.steps()[step_b].collectives == 0) return kNone;
  std::vector<RawCollective> in_a = a.RawCollectives(step_a);
  std::vector<RawCollective> in_b = b.RawCollectives(step_b);
  auto by_op = [](const RawCollective& x, const RawCollective& y) {
    return x.op_index < y.op_index;
  };
  std::sort(in_a.begin(), in_a.end(), by_op);
  std::sort(in_b.begin(), in_b.end(), by_op);
  for (size_t idx = 0; idx < std::min(in_a.size(), in_b.size()); ++idx) {
    if (in_a[idx].op_index != in_b[idx].op_index) {
      return std::min(in_a[idx].op_index, in_b[idx].op_index);
    }
    if (!CollectiveEqual(in_a[idx], in_b[idx])) return in_a[idx].op_index;
  }
  if (in_a.size() > in_b.size()) return in_a[in_b.size()].op_index;
  if (in_b.size() > in_a.size()) return in_b[in_a.size()].op_index;
  return kNone;
}

uint64_t RawComparer::EqualPrefix(const TraceIndex& a, size_t step_a, const TraceIndex& b,
                                  size_t step_b) {
  Sync();
  const uint64_t limit = CollectiveLimit(a, step_a, b, step_b);
  TraceIndex::RawOps ops_a(a, step_a), ops_b(b, step_b);
  std::string_view payload_a, payload_b;
  uint32_t ids_a = 0, ids_b = 0;
  uint64_t equal = 0;
  while (equal < limit && ops_a.Next(&payload_a, &ids_a) && ops_b.Next(&payload_b, &ids_b) &&
         Equal(payload_a, ids_a, payload_b, ids_b)) {
    ++equal;
  }
  return equal;
}

}  // namespace upguard
