#include "trace/step_digest.h"

#include <xxhash.h>

#include <string>

#include "trace/format.h"
#include "trace/varint.h"

namespace upguard {
namespace {

constexpr uint8_t kNameEnd = 0x00;
constexpr uint8_t kArgsEnd = 0xFF;
constexpr uint8_t kCollectiveMark = 0x06;  // the Collective record's type (§5.4)

Digest128 FromXxh(XXH128_hash_t hash) { return Digest128{hash.high64, hash.low64}; }

// Each arg's kind, and the digest of a tensor or scalar; then the end mark.
void AppendArgs(const std::vector<ArgRecord>& args, const StringTable& strings,
                std::string* buffer) {
  for (const ArgRecord& arg : args) {
    buffer->push_back(static_cast<char>(arg.kind));
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
  std::string buffer;  // one op's bytes
  ~State() { XXH3_freeState(xxh); }
};

StepDigester::StepDigester() : state_(std::make_unique<State>()) { Reset(); }
StepDigester::~StepDigester() = default;

void StepDigester::Reset() {
  XXH3_128bits_reset(state_->xxh);
  op_count_ = 0;
}

// The op's bytes are gathered and hashed in one update: XXH3's streaming state costs per call,
// and an op contributes a dozen short pieces.
void StepDigester::AddOp(const OpRecord& op, const StringTable& strings) {
  std::string& buffer = state_->buffer;
  buffer.assign(strings.Get(op.op));
  buffer.push_back(static_cast<char>(kNameEnd));
  AppendArgs(op.inputs, strings, &buffer);
  AppendArgs(op.outputs, strings, &buffer);
  XXH3_128bits_update(state_->xxh, buffer.data(), buffer.size());
  ++op_count_;
}

void StepDigester::AddCollective(uint64_t op_index, const CollectiveInfo& info,
                                 const StringTable& strings) {
  std::string& buffer = state_->buffer;
  buffer.assign(1, static_cast<char>(kCollectiveMark));
  AppendVarint(op_index, &buffer);
  buffer.push_back(static_cast<char>(info.completed ? kCollectiveFlagCompleted : 0));
  AppendArgs(info.outputs, strings, &buffer);
  XXH3_128bits_update(state_->xxh, buffer.data(), buffer.size());
}

Digest128 StepDigester::Finish() const { return FromXxh(XXH3_128bits_digest(state_->xxh)); }

}  // namespace upguard
