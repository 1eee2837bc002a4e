#include "trace/step_digest.h"

#include <xxhash.h>

#include "trace/format.h"

namespace upguard {
namespace {

constexpr uint8_t kNameEnd = 0x00;
constexpr uint8_t kArgsEnd = 0xFF;

Digest128 FromXxh(XXH128_hash_t hash) { return Digest128{hash.high64, hash.low64}; }

}  // namespace

struct StepDigester::State {
  XXH3_state_t* xxh = XXH3_createState();
  ~State() { XXH3_freeState(xxh); }
};

StepDigester::StepDigester() : state_(std::make_unique<State>()) { Reset(); }
StepDigester::~StepDigester() = default;

void StepDigester::Reset() {
  XXH3_128bits_reset(state_->xxh);
  op_count_ = 0;
}

void StepDigester::AddOp(const OpRecord& op, const StringTable& strings) {
  XXH3_state_t* xxh = state_->xxh;
  const std::string& name = strings.Get(op.op);
  XXH3_128bits_update(xxh, name.data(), name.size());
  XXH3_128bits_update(xxh, &kNameEnd, 1);
  for (const auto* args : {&op.inputs, &op.outputs}) {
    for (const ArgRecord& arg : *args) {
      const uint8_t kind = static_cast<uint8_t>(arg.kind);
      XXH3_128bits_update(xxh, &kind, 1);
      if (arg.kind != ArgKind::kTensor && arg.kind != ArgKind::kScalar) continue;
      const Digest128& digest =
          arg.kind == ArgKind::kTensor ? arg.digest : strings.TextDigest(arg.text);
      char canonical[kDigestBytes];
      StoreDigest(digest, canonical);
      XXH3_128bits_update(xxh, canonical, sizeof(canonical));
    }
    XXH3_128bits_update(xxh, &kArgsEnd, 1);
  }
  ++op_count_;
}

Digest128 StepDigester::Finish() const { return FromXxh(XXH3_128bits_digest(state_->xxh)); }

}  // namespace upguard
