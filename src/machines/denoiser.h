// One metric's denoiser as the detector runs it (Minder §4.2): the encoder of an LSTM-VAE
// trained on healthy windows of the metric (`upguard machines fit`), turning a machine's
// normalised window into its latent mean, the embedding machines are compared by. The weights
// and their layout are docs/formats/machine-model.md §2; only the forward pass lives here, in
// plain C++, so `detect` needs no libtorch and embeds a thousand machines' windows at once.
//
//   Denoiser cpu = ...;                      // from ReadMachineModel (machine_model.h)
//   std::vector<float> out(machines * cpu.latent);
//   cpu.EmbedBatch(windows.data(), machines, window, out.data());  // windows: [machine][point]
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "upguard/status.h"

namespace upguard::machines {

// A normalised point is clamped to this before the encoder: a fault can put a metric at any
// multiple of its healthy range, and an LSTM's gates saturate long before (the training's level
// shifts cover this span, lstm_vae.h).
inline constexpr float kInputLow = -2.0f;
inline constexpr float kInputHigh = 3.0f;

struct Denoiser {
  size_t hidden = 4;
  size_t latent = 8;
  double lo = 0, hi = 1;    // the range a window is normalised to
  std::vector<float> w_ih;  // 4H x 1
  std::vector<float> w_hh;  // 4H x H, row-major, gates i, f, g, o
  std::vector<float> b;     // 4H (b_ih + b_hh)
  std::vector<float> w_mu;  // L x H, row-major
  std::vector<float> b_mu;  // L
  // The least score (peer_score.h, in latent units) a candidate needs: healthy machines' scores
  // stay below it (docs/formats/machine-model.md §2).
  double score_limit = 0;
  // Facts of the fit (information only).
  size_t windows = 0;
  double reconstruction_rmse = 0;
  double noise_rmse = 0;

  // The array lengths agree with hidden and latent, and every weight is finite; else says which.
  Status Check(const std::string& where) const;

  // `count` windows of `window` normalised points each, [machine][point] (clamped to
  // [kInputLow, kInputHigh] here); writes `count` embeddings of `latent` floats to `out`,
  // [machine][latent].
  void EmbedBatch(const float* windows, size_t count, size_t window, float* out) const;
};

}  // namespace upguard::machines
