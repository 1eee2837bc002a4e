#include "machines_fit/lstm_vae.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace upguard::machines {
namespace {

struct VaeImpl : torch::nn::Module {
  VaeImpl(size_t hidden, size_t latent)
      : encoder(register_module(
            "encoder",
            torch::nn::LSTM(
                torch::nn::LSTMOptions(1, static_cast<int64_t>(hidden)).batch_first(true)))),
        mu(register_module(
            "mu", torch::nn::Linear(static_cast<int64_t>(hidden), static_cast<int64_t>(latent)))),
        logvar(register_module("logvar", torch::nn::Linear(static_cast<int64_t>(hidden),
                                                           static_cast<int64_t>(latent)))),
        decoder(register_module("decoder",
                                torch::nn::LSTM(torch::nn::LSTMOptions(static_cast<int64_t>(latent),
                                                                       static_cast<int64_t>(hidden))
                                                    .batch_first(true)))),
        out(register_module("out", torch::nn::Linear(static_cast<int64_t>(hidden), 1))) {}

  // x: [batch, window, 1] -> the last hidden state [batch, hidden].
  torch::Tensor Encode(const torch::Tensor& x) {
    auto [seq, state] = encoder->forward(x);
    return std::get<0>(state).squeeze(0);
  }

  torch::nn::LSTM encoder;
  torch::nn::Linear mu, logvar;
  torch::nn::LSTM decoder;
  torch::nn::Linear out;
};
TORCH_MODULE(Vae);

std::vector<float> Flat(const torch::Tensor& t) {
  const torch::Tensor c = t.detach().contiguous().to(torch::kFloat32);
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

torch::Tensor FromFlat(const std::vector<float>& values, std::vector<int64_t> shape) {
  return torch::from_blob(const_cast<float*>(values.data()), shape, torch::kFloat32).clone();
}

}  // namespace

StatusOr<TrainedDenoiser> TrainDenoiser(const std::vector<float>& windows, size_t window,
                                        const TrainOptions& options) {
  const size_t count = window == 0 ? 0 : windows.size() / window;
  if (count < 16) {
    return InvalidArgument("too few healthy windows to train a denoiser on (" +
                           std::to_string(count) + "; at least 16)");
  }
  // Batches of 128 windows of 8 points: a thread pool costs more than it saves (and one thread
  // makes the fit the same from run to run).
  torch::set_num_threads(1);
  torch::manual_seed(options.seed);
  const int64_t w = static_cast<int64_t>(window);
  const torch::Tensor data =
      FromFlat(windows, {static_cast<int64_t>(count), w, 1}).clamp(kInputLow, kInputHigh);
  Vae vae(options.hidden, options.latent);
  torch::optim::Adam adam(vae->parameters(), torch::optim::AdamOptions(options.learning_rate));
  const int64_t batch = static_cast<int64_t>(std::min(options.batch, count));
  for (size_t step = 0; step < options.steps; ++step) {
    const torch::Tensor idx = torch::randint(static_cast<int64_t>(count), {batch}, torch::kLong);
    torch::Tensor x = data.index_select(0, idx);
    const torch::Tensor moved = torch::rand({batch, 1, 1}) < 0.5;
    const torch::Tensor shift = (torch::rand({batch, 1, 1}) * 2 - 1) * options.shift;
    x = (x + shift * moved.to(torch::kFloat32)).clamp(kInputLow, kInputHigh);
    const torch::Tensor h = vae->Encode(x);
    const torch::Tensor mu = vae->mu->forward(h);
    const torch::Tensor logvar = vae->logvar->forward(h).clamp(-10, 10);
    const torch::Tensor z = mu + torch::randn_like(mu) * torch::exp(0.5 * logvar);
    auto [seq, state] = vae->decoder->forward(z.unsqueeze(1).expand({batch, w, mu.size(1)}));
    const torch::Tensor recon = vae->out->forward(seq);
    const torch::Tensor sse = (recon - x).pow(2).sum({1, 2}).mean();
    const torch::Tensor kl = (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1)).mean();
    const torch::Tensor loss = sse + options.beta * kl;
    adam.zero_grad();
    loss.backward();
    adam.step();
  }
  TrainedDenoiser out;
  Denoiser& d = out.denoiser;
  d.hidden = options.hidden;
  d.latent = options.latent;
  d.windows = count;
  auto params = vae->encoder->named_parameters();
  d.w_ih = Flat(params["weight_ih_l0"]);
  d.w_hh = Flat(params["weight_hh_l0"]);
  d.b = Flat(params["bias_ih_l0"] + params["bias_hh_l0"]);
  d.w_mu = Flat(vae->mu->weight);
  d.b_mu = Flat(vae->mu->bias);
  {
    torch::NoGradGuard guard;
    const torch::Tensor h = vae->Encode(data);
    const torch::Tensor mu = vae->mu->forward(h);
    auto [seq, state] = vae->decoder->forward(mu.unsqueeze(1).expand({-1, w, mu.size(1)}));
    const torch::Tensor recon = vae->out->forward(seq);
    out.reconstruction_rmse = std::sqrt((recon - data).pow(2).mean().item<double>());
  }
  if (!std::isfinite(out.reconstruction_rmse)) {
    return Internal("the denoiser's training diverged (a non-finite loss)");
  }
  return out;
}

std::vector<float> TorchEmbed(const Denoiser& d, const std::vector<float>& windows, size_t window) {
  torch::NoGradGuard guard;
  const int64_t count = static_cast<int64_t>(windows.size() / window);
  torch::nn::LSTM lstm(torch::nn::LSTMOptions(1, static_cast<int64_t>(d.hidden)).batch_first(true));
  const int64_t gates = 4 * static_cast<int64_t>(d.hidden);
  auto params = lstm->named_parameters();
  params["weight_ih_l0"].copy_(FromFlat(d.w_ih, {gates, 1}));
  params["weight_hh_l0"].copy_(FromFlat(d.w_hh, {gates, static_cast<int64_t>(d.hidden)}));
  params["bias_ih_l0"].copy_(FromFlat(d.b, {gates}));
  params["bias_hh_l0"].zero_();
  auto [seq, state] = lstm->forward(FromFlat(windows, {count, static_cast<int64_t>(window), 1}));
  const torch::Tensor h = std::get<0>(state).squeeze(0);
  const torch::Tensor w_mu =
      FromFlat(d.w_mu, {static_cast<int64_t>(d.latent), static_cast<int64_t>(d.hidden)});
  return Flat(torch::matmul(h, w_mu.t()) + FromFlat(d.b_mu, {static_cast<int64_t>(d.latent)}));
}

}  // namespace upguard::machines
