#include "machines/denoiser.h"

#include <algorithm>
#include <cmath>
#include <cstring>

// The vector helpers below are internal and always inlined: no vector crosses an ABI boundary,
// so GCC's note that passing them changes with AVX does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace upguard::machines {
namespace {

constexpr size_t kBlock = 8;  // machines embedded side by side, one vector lane each
constexpr size_t kMaxHidden = 32;
constexpr size_t kMaxLatent = 64;

// kBlock lanes as one GCC/Clang vector: the encoder runs on whole blocks of machines (one AVX2
// register a vector in the avx2 clone, two SSE ones otherwise), with no reliance on the
// auto-vectorizer, which leaves the saturating selects below scalar without -ffast-math. Wider
// vectors than the target's registers turn those selects scalar too (measured: 3x slower).
typedef float Lanes __attribute__((vector_size(kBlock * sizeof(float))));

[[gnu::always_inline]] inline Lanes Splat(float value) { return Lanes{} + value; }

[[gnu::always_inline]] inline Lanes Clamp(Lanes x, float lo, float hi) {
  x = x < Splat(lo) ? Splat(lo) : x;
  return x > Splat(hi) ? Splat(hi) : x;
}

// tanh to ~1e-6 absolute (a rational approximation, exact 0 and odd), saturating to +-1 beyond
// where it reaches 1: cheap enough for a thousand machines' windows every point.
[[gnu::always_inline]] inline Lanes FastTanh(Lanes x) {
  const Lanes v = Clamp(x, -4.97f, 4.97f);
  const Lanes v2 = v * v;
  const Lanes num = v * (135135.0f + v2 * (17325.0f + v2 * (378.0f + v2)));
  const Lanes den = 135135.0f + v2 * (62370.0f + v2 * (3150.0f + v2 * 28.0f));
  return Clamp(num / den, -1.0f, 1.0f);
}

[[gnu::always_inline]] inline Lanes FastSigmoid(Lanes x) {
  return 0.5f * FastTanh(0.5f * x) + 0.5f;
}

// kBlock windows through the encoder with H hidden units known at compile time (the paper's 4;
// other sizes go through H = 0, the runtime size): weights in locals, state in registers.
template <size_t H>
[[gnu::always_inline]] inline void EmbedBlockOf(const Denoiser& model, const float* x,
                                                size_t window, float* mu) {
  const size_t hidden = H ? H : model.hidden;
  constexpr size_t kSlots = H ? H : kMaxHidden;
  float w_ih[4 * kSlots], b[4 * kSlots], w_hh[4 * kSlots][kSlots];
  for (size_t r = 0; r < 4 * hidden; ++r) {
    w_ih[r] = model.w_ih[r];
    b[r] = model.b[r];
    for (size_t k = 0; k < hidden; ++k) w_hh[r][k] = model.w_hh[r * hidden + k];
  }
  Lanes h[kSlots] = {};
  Lanes c[kSlots] = {};
  Lanes pre[4 * kSlots];
  for (size_t t = 0; t < window; ++t) {
    Lanes xt;
    std::memcpy(&xt, x + t * kBlock, sizeof(xt));
    for (size_t r = 0; r < 4 * hidden; ++r) {
      Lanes sum = b[r] + w_ih[r] * xt;
      for (size_t k = 0; k < hidden; ++k) sum += w_hh[r][k] * h[k];
      pre[r] = sum;
    }
    for (size_t k = 0; k < hidden; ++k) {  // gates in PyTorch's order: i, f, g, o
      c[k] =
          FastSigmoid(pre[hidden + k]) * c[k] + FastSigmoid(pre[k]) * FastTanh(pre[2 * hidden + k]);
      h[k] = FastSigmoid(pre[3 * hidden + k]) * FastTanh(c[k]);
    }
  }
  for (size_t l = 0; l < model.latent; ++l) {
    Lanes sum = Splat(model.b_mu[l]);
    for (size_t k = 0; k < hidden; ++k) sum += model.w_mu[l * hidden + k] * h[k];
    std::memcpy(mu + l * kBlock, &sum, sizeof(sum));
  }
}

// kBlock windows through the encoder. `x`: [point][lane], zero-padded past the last machine.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx2", "default")))
#endif
void EmbedBlock(const Denoiser& model, const float* x, size_t window, float* mu) {
  if (model.hidden == 4) {
    EmbedBlockOf<4>(model, x, window, mu);
  } else {
    EmbedBlockOf<0>(model, x, window, mu);
  }
}

Status CheckArray(const std::vector<float>& values, size_t expected, const std::string& where,
                  const char* key) {
  if (values.size() != expected) {
    return InvalidArgument(where + ": \"" + key + "\" has " + std::to_string(values.size()) +
                           " numbers, expected " + std::to_string(expected));
  }
  for (size_t idx = 0; idx < values.size(); ++idx) {
    if (!std::isfinite(values[idx])) {
      return InvalidArgument(where + ": \"" + key + "\"[" + std::to_string(idx) +
                             "] is not a finite number");
    }
  }
  return Status::Ok();
}

}  // namespace

Status Denoiser::Check(const std::string& where) const {
  if (hidden == 0 || hidden > kMaxHidden || latent == 0 || latent > kMaxLatent) {
    return InvalidArgument(where + ": hidden must be 1.." + std::to_string(kMaxHidden) +
                           " and latent 1.." + std::to_string(kMaxLatent));
  }
  if (!(std::isfinite(score_limit) && score_limit >= 0)) {
    return InvalidArgument(where + ": \"score_limit\" must be a finite number, 0 or more");
  }
  if (!(std::isfinite(lo) && std::isfinite(hi) && hi > lo)) {
    return InvalidArgument(where + ": \"range\" must be two finite numbers, the second larger");
  }
  RETURN_IF_ERROR(CheckArray(w_ih, 4 * hidden, where, "w_ih"));
  RETURN_IF_ERROR(CheckArray(w_hh, 4 * hidden * hidden, where, "w_hh"));
  RETURN_IF_ERROR(CheckArray(b, 4 * hidden, where, "b"));
  RETURN_IF_ERROR(CheckArray(w_mu, latent * hidden, where, "w_mu"));
  return CheckArray(b_mu, latent, where, "b_mu");
}

void Denoiser::EmbedBatch(const float* windows, size_t count, size_t window, float* out) const {
  std::vector<float> x(window * kBlock);
  std::vector<float> mu(latent * kBlock);
  for (size_t first = 0; first < count; first += kBlock) {
    const size_t lanes = std::min(kBlock, count - first);
    std::fill(x.begin(), x.end(), 0.0f);
    for (size_t lane = 0; lane < lanes; ++lane) {
      const float* row = windows + (first + lane) * window;
      for (size_t t = 0; t < window; ++t) {
        x[t * kBlock + lane] = std::min(std::max(row[t], kInputLow), kInputHigh);
      }
    }
    EmbedBlock(*this, x.data(), window, mu.data());
    for (size_t lane = 0; lane < lanes; ++lane) {
      for (size_t l = 0; l < latent; ++l) out[(first + lane) * latent + l] = mu[l * kBlock + lane];
    }
  }
}

}  // namespace upguard::machines
