#include "diff/raw_compare.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "trace/format.h"
#include "trace/op_payload.h"
#include "trace/record_codec.h"
#include "trace/varint.h"

namespace upguard {
namespace {

constexpr StringId kNoString = std::numeric_limits<StringId>::max();

using Cursor = PayloadCursor<CheckOnly>;

bool NoLabel(uint64_t, StringId) { return true; }

// The same dims, in other bytes (a longer varint form of a value).
[[gnu::noinline]] bool SameDimValues(const ArgView& a, const ArgView& b) {
  const char* pa = a.dims;
  const char* pb = b.dims;
  for (uint64_t dim_idx = 0; dim_idx < a.ndim; ++dim_idx) {
    uint64_t dim_a = 0, dim_b = 0;
    DecodeVarint(&pa, a.dims_end, &dim_a);
    DecodeVarint(&pb, b.dims_end, &dim_b);
    if (dim_a != dim_b) return false;
  }
  return true;
}

// The same dims (both checked): mostly the same bytes.
inline bool SameDims(const ArgView& a, const ArgView& b) {
  if (a.ndim != b.ndim) return false;
  const size_t size = static_cast<size_t>(a.dims_end - a.dims);
  if (size == static_cast<size_t>(b.dims_end - b.dims) && std::memcmp(a.dims, b.dims, size) == 0) {
    return true;
  }
  return SameDimValues(a, b);
}

// WalkOp's visitor over A for LedEqual: B follows A's walk reading only its seq, step and string
// ids; every byte between them must be the same as in A (so it is checked too). Ops whose ignored
// fields differ fail here and take the slower path.
class Follower {
 public:
  Follower(Cursor* b, const std::vector<StringId>& b_to_a) : b_(*b), b_to_a_(b_to_a) {}

  [[gnu::always_inline]] bool Header(const OpHeader& a) {
    uint64_t seq = 0;
    uint32_t step = 0;
    StringId op = kEmptyString, other = kEmptyString;
    if (!ReadOpPrefix(b_, &seq, &step) || !b_.Match(a.body, a.ids) || !b_.Id("op name", &op) ||
        b_to_a_[op] != a.op || !b_.Id("module", &other) || !b_.Id("call site", &other) ||
        !b_.Id("node", &other)) {
      return false;
    }
    span_ = a.end;
    return true;
  }
  bool Count(ArgSide, uint64_t count) {
    args_ += count;
    return true;
  }
  ArgTarget Target(ArgSide, uint64_t) { return ArgTarget{}; }
  [[gnu::always_inline]] bool Arg(ArgSide, uint64_t, const ArgView& a) {
    StringId name = kEmptyString;
    if (!b_.Match(span_, a.name_at) || !b_.Id("argument name", &name)) return false;
    span_ = a.body;
    if (a.kind != ArgKind::kScalar) return true;
    StringId text = kEmptyString;
    if (!b_.Id("scalar text", &text) || b_to_a_[text] != a.text) return false;
    span_ = a.end;
    return true;
  }
  // The labels are not compared: B's are only checked (with no message, so no op to name).
  bool ArgsEnd(const char* pos) {
    return b_.Match(span_, pos) && ReadLabels(b_, kEmptyString, 0, args_, 0, NoLabel);
  }
  bool Label(uint64_t, StringId) { return true; }

 private:
  Cursor& b_;
  const std::vector<StringId>& b_to_a_;
  const char* span_ = nullptr;  // from here to A's position, B must repeat A's bytes
  uint64_t args_ = 0;
};

// WalkOp's visitor over A for the field-by-field comparison: B is read alongside, one field
// group at a time, and what the walk compares must be equal: the op name, argument counts,
// kinds, dtypes, shapes, tensor digests and scalar texts.
class Lockstep {
 public:
  Lockstep(Cursor* b, const std::vector<StringId>& b_to_a) : b_(*b), b_to_a_(b_to_a) {}

  [[gnu::always_inline]] bool Header(const OpHeader& a) {
    return ReadOpHeader(b_, &header_) && b_to_a_[header_.op] == a.op;
  }
  [[gnu::always_inline]] bool Count(ArgSide side, uint64_t count) {
    uint64_t count_b = 0;
    if (!ReadArgCount(b_, side, &count_b) || count_b != count) return false;
    args_ += count;
    return true;
  }
  ArgTarget Target(ArgSide, uint64_t) { return ArgTarget{}; }
  [[gnu::always_inline]] bool Arg(ArgSide side, uint64_t index, const ArgView& a) {
    ArgView b;
    if (!ReadArg(b_, ArgWhere{side, index}, ArgTarget{}, &b) || a.kind != b.kind) return false;
    if (a.kind == ArgKind::kScalar) return b_to_a_[b.text] == a.text;
    if (a.dims == nullptr) return true;  // none: no body
    return a.dtype == b.dtype && SameDims(a, b) &&
           (a.kind != ArgKind::kTensor || std::memcmp(a.digest, b.digest, kDigestBytes) == 0);
  }
  // Bytes after the labels are for later format versions: ignored, as DecodeOp does.
  bool ArgsEnd(const char*) { return ReadLabels(b_, header_.op, header_.seq, args_, 0, NoLabel); }
  bool Label(uint64_t, StringId) { return true; }

 private:
  Cursor& b_;
  const std::vector<StringId>& b_to_a_;
  OpHeader header_;
  uint64_t args_ = 0;
};

// A and B compared with `Visitor` walking A. Every field of A is read and checked.
template <class Visitor>
bool WalkBoth(std::string_view payload_a, uint32_t ids_a, std::string_view payload_b,
              uint32_t ids_b, const std::vector<StringId>& b_to_a) {
  Cursor a(payload_a, CheckOnly{}, ids_a), b(payload_b, CheckOnly{}, ids_b);
  Visitor visitor(&b, b_to_a);
  return WalkOp(a, visitor);
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
  if (ids_a <= common_ && ids_b <= common_ && AfterOpSeq(a) == AfterOpSeq(b)) return true;
  return WalkBoth<Follower>(a, ids_a, b, ids_b, b_to_a_) ||
         WalkBoth<Lockstep>(a, ids_a, b, ids_b, b_to_a_);
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
