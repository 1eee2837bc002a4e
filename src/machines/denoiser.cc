#include "machines/denoiser.h"

#include <algorithm>
#include <cmath>

namespace upguard::machines {
namespace {

constexpr size_t kBlock = 16;  // machines embedded side by side: the inner loops vectorize
constexpr size_t kMaxHidden = 32;
constexpr size_t kMaxLatent = 64;

// tanh to ~1e-6 absolute (a rational approximation, exact 0 and odd), saturating to +-1 beyond
// where it reaches 1: cheap enough for a thousand machines' windows every point.
inline float FastTanh(float x) {
  const float clamped = std::min(std::max(x, -4.97f), 4.97f);
  const float x2 = clamped * clamped;
  const float num = clamped * (135135.0f + x2 * (17325.0f + x2 * (378.0f + x2)));
  const float den = 135135.0f + x2 * (62370.0f + x2 * (3150.0f + x2 * 28.0f));
  return std::min(std::max(num / den, -1.0f), 1.0f);
}

inline float FastSigmoid(float x) { return 0.5f * FastTanh(0.5f * x) + 0.5f; }

// Up to kBlock windows through the encoder. `x`: [point][lane], zero-padded past `lanes`.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx2", "default")))
#endif
void EmbedBlock(const Denoiser& model, const float* x, size_t window, float* mu) {
  const size_t hidden = model.hidden;
  const size_t gates = 4 * hidden;
  float h[kMaxHidden][kBlock] = {};
  float c[kMaxHidden][kBlock] = {};
  float pre[4 * kMaxHidden][kBlock];
  for (size_t t = 0; t < window; ++t) {
    const float* xt = x + t * kBlock;
    for (size_t r = 0; r < gates; ++r) {
      const float w = model.w_ih[r];
      const float bias = model.b[r];
      for (size_t lane = 0; lane < kBlock; ++lane) pre[r][lane] = bias + w * xt[lane];
      for (size_t k = 0; k < hidden; ++k) {
        const float u = model.w_hh[r * hidden + k];
        for (size_t lane = 0; lane < kBlock; ++lane) pre[r][lane] += u * h[k][lane];
      }
    }
    for (size_t k = 0; k < hidden; ++k) {
      for (size_t lane = 0; lane < kBlock; ++lane) {
        const float in = FastSigmoid(pre[k][lane]);
        const float forget = FastSigmoid(pre[hidden + k][lane]);
        const float cell = FastTanh(pre[2 * hidden + k][lane]);
        const float out = FastSigmoid(pre[3 * hidden + k][lane]);
        c[k][lane] = forget * c[k][lane] + in * cell;
        h[k][lane] = out * FastTanh(c[k][lane]);
      }
    }
  }
  for (size_t l = 0; l < model.latent; ++l) {
    for (size_t lane = 0; lane < kBlock; ++lane) {
      float sum = model.b_mu[l];
      for (size_t k = 0; k < hidden; ++k) sum += model.w_mu[l * hidden + k] * h[k][lane];
      mu[l * kBlock + lane] = sum;
    }
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
