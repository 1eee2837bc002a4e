// Minder's denoiser for one metric, trained with libtorch: an LSTM-VAE (encoder LSTM -> latent
// mean and log-variance -> a sample -> decoder LSTM fed the sample at every point -> the window
// again) fit to healthy windows; the encoder's weights become a Denoiser (machines/denoiser.h),
// which `detect` runs without libtorch. The only file of upguard that trains anything.
//
//   TrainOptions options;  // the paper's sizes: hidden 4, latent 8
//   ASSIGN_OR_RETURN(TrainedDenoiser d, TrainDenoiser(windows, 8, options));
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "machines/denoiser.h"
#include "upguard/status.h"

namespace upguard::machines {

struct TrainOptions {
  size_t hidden = 4;
  size_t latent = 8;
  // The KL term's weight against the summed squared reconstruction error of a window. Small: at
  // 1 a window of 8 points gains less from encoding its level than the KL term costs, and the
  // encoder collapses to the prior (every window the same embedding).
  double beta = 1e-3;
  // Half of each batch is moved by a level shift uniform in +-`shift` normalised units (and
  // clamped like detection's input): the healthy windows cover only [0, 1], a fault lands
  // anywhere, and an encoder that never saw a level outside [0, 1] may map a far one back near
  // the healthy ones. Shapes, and so the noise the encoder learns to leave out, stay healthy.
  double shift = 2.0;
  size_t steps = 800;  // optimizer steps (Adam)
  size_t batch = 128;
  double learning_rate = 1e-2;
  uint64_t seed = 0;
};

struct TrainedDenoiser {
  Denoiser denoiser;               // range left to the caller
  double reconstruction_rmse = 0;  // on the training windows, normalised units per point
};

// `windows`: `count` rows of `window` normalised points, [row][point], count >= 16.
StatusOr<TrainedDenoiser> TrainDenoiser(const std::vector<float>& windows, size_t window,
                                        const TrainOptions& options);

// The encoder's latent means of `windows` as libtorch computes them (tests compare the plain C++
// forward of Denoiser::EmbedBatch with it).
std::vector<float> TorchEmbed(const Denoiser& denoiser, const std::vector<float>& windows,
                              size_t window);

}  // namespace upguard::machines
