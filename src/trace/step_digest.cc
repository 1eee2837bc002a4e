#include "trace/step_digest.h"

#include <xxhash.h>

#include <algorithm>
#include <string>

#include "trace/format.h"
#include "trace/varint.h"

namespace upguard {
namespace {

constexpr uint8_t kNameEnd = 0x00;
constexpr uint8_t kArgsEnd = 0xFF;
constexpr uint8_t kCollectiveMark = 0x06;  // the Collective record's type (§5.4)

Digest128 FromXxh(XXH128_hash_t hash) { return Digest128{hash.high64, hash.low64}; }

// Each arg's kind, and the digest of a tensor or scalar (a tensor digest is bound to its dtype
// and shape), or the dtype and shape of a kind without values (the diff compares those); then
// the end mark.
void AppendArgs(const std::vector<ArgRecord>& args, const StringTable& strings,
                std::string* buffer) {
  for (const ArgRecord& arg : args) {
    // An unread tensor (version 6) is hashed as version 5 hashed it, as opaque: the step digests
    // of the two versions stay comparable. Its reason is not hashed: nothing compares values
    // there (the StepEnd's unread tally says so, §5.4).
    const ArgKind kind = arg.kind == ArgKind::kUnread ? ArgKind::kOpaque : arg.kind;
    buffer->push_back(static_cast<char>(kind));
    if (kind == ArgKind::kAlias || kind == ArgKind::kUninit || kind == ArgKind::kOpaque) {
      buffer->push_back(static_cast<char>(arg.dtype));
      AppendVarint(arg.shape.size(), buffer);
      for (int64_t dim : arg.shape) AppendVarint(static_cast<uint64_t>(dim), buffer);
      continue;
    }
    if (arg.kind != ArgKind::kTensor && arg.kind != ArgKind::kScalar) continue;
    const Digest128& digest =
        arg.kind == ArgKind::kTensor ? arg.digest : strings.TextDigest(arg.text);
    char canonical[kDigestBytes];
    StoreDigest(digest, canonical);
    buffer->append(canonical, sizeof(canonical));
  }
  buffer->push_back(static_cast<char>(kArgsEnd));
}

}  // namespace

struct StepDigester::State {
  XXH3_state_t* xxh = XXH3_createState();
  std::string buffer;   // one op's bytes
  std::string pending;  // nested ops not yet known to be vouched for by a top-level op
  ~State() { XXH3_freeState(xxh); }
};

StepDigester::StepDigester() : state_(std::make_unique<State>()) { Reset(); }
StepDigester::~StepDigester() = default;

void StepDigester::Reset() {
  XXH3_128bits_reset(state_->xxh);
  state_->pending.clear();
  op_count_ = 0;
  input_ops_.clear();
}

// The op's bytes are gathered and hashed in one update: XXH3's streaming state costs per call,
// and an op contributes a dozen short pieces. Nested ops wait in `pending` until the top-level
// op that encloses them is written (ops come in completion order, §5.4): one with a result
// vouches for them and they are dropped; else they are hashed before it. Input-pipeline ops
// never enter.
void StepDigester::AddOp(const OpRecord& op, const StringTable& strings) {
  if (op.phase == Phase::kInput) {
    input_ops_.push_back(op_count_++);
    return;
  }
  ++op_count_;
  std::string& buffer = op.depth > 0 ? state_->pending : state_->buffer;
  if (op.depth == 0) buffer.clear();
  buffer.append(strings.Get(op.op));
  buffer.push_back(static_cast<char>(kNameEnd));
  AppendArgs(op.inputs, strings, &buffer);
  AppendArgs(op.outputs, strings, &buffer);
  if (op.depth > 0) return;
  if (op.outputs.empty() && !state_->pending.empty()) {
    XXH3_128bits_update(state_->xxh, state_->pending.data(), state_->pending.size());
  }
  state_->pending.clear();
  XXH3_128bits_update(state_->xxh, buffer.data(), buffer.size());
}

void StepDigester::FoldPending() {
  if (state_->pending.empty()) return;
  XXH3_128bits_update(state_->xxh, state_->pending.data(), state_->pending.size());
  state_->pending.clear();
}

void StepDigester::AddCollective(uint64_t op_index, const CollectiveInfo& info,
                                 const StringTable& strings) {
  FoldPending();
  std::string& buffer = state_->buffer;
  buffer.assign(1, static_cast<char>(kCollectiveMark));
  const auto inputs_before = static_cast<uint64_t>(
      std::lower_bound(input_ops_.begin(), input_ops_.end(), op_index) - input_ops_.begin());
  AppendVarint(op_index - inputs_before, &buffer);
  buffer.push_back(static_cast<char>(info.completed ? kCollectiveFlagCompleted : 0));
  AppendArgs(info.outputs, strings, &buffer);
  XXH3_128bits_update(state_->xxh, buffer.data(), buffer.size());
}

Digest128 StepDigester::Finish() const {
  if (state_->pending.empty()) return FromXxh(XXH3_128bits_digest(state_->xxh));
  // Nested ops that no top-level op of the step enclosed count as top-level ones.
  XXH3_state_t* copy = XXH3_createState();
  XXH3_copyState(copy, state_->xxh);
  XXH3_128bits_update(copy, state_->pending.data(), state_->pending.size());
  const Digest128 digest = FromXxh(XXH3_128bits_digest(copy));
  XXH3_freeState(copy);
  return digest;
}

}  // namespace upguard
