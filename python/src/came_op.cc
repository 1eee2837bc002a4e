// The CAME optimizer's step as a torch operator, `torch.ops.upguard.came_step`: one call per
// parameter tensor, dispatched like any op, so that `upguard record` sees it with its inputs
// and the state it writes (the schema's alias annotations). The kernel is torch-free
// (src/optim/came.h); this file adapts tensors to it and runs its blocks on torch's intra-op
// threads. python/upguard/optim.py is its caller.
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "optim/came.h"

namespace upguard::torch_adapter {
namespace {

optim::Precision PrecisionOf(const at::Tensor& tensor, const char* what) {
  switch (tensor.scalar_type()) {
    case at::kFloat:
      return optim::Precision::kFloat32;
    case at::kHalf:
      return optim::Precision::kFloat16;
    case at::kBFloat16:
      return optim::Precision::kBFloat16;
    default:
      TORCH_CHECK(false, "upguard CAME: the ", what, " is ", tensor.scalar_type(),
                  "; the fused step takes float32, float16 and bfloat16");
  }
  return optim::Precision::kFloat32;
}

// A float32 state tensor of the expected shape, contiguous, on the CPU: its data pointer.
float* State(const at::Tensor& tensor, at::IntArrayRef shape, const char* name) {
  TORCH_CHECK(tensor.scalar_type() == at::kFloat && tensor.is_contiguous() &&
                  tensor.device().is_cpu() && tensor.sizes() == shape,
              "upguard CAME: state '", name, "' must be a contiguous float32 CPU tensor of shape ",
              shape, "; it is ", tensor.scalar_type(), " of shape ", tensor.sizes(),
              " (was the optimizer's state loaded from another parameter?)");
  return tensor.data_ptr<float>();
}

float* OptionalState(const c10::optional<at::Tensor>& tensor, at::IntArrayRef shape,
                     const char* name) {
  return tensor.has_value() && tensor->defined() ? State(*tensor, shape, name) : nullptr;
}

void CameStep(at::Tensor& param, const at::Tensor& grad, at::Tensor& exp_avg,
              at::Tensor& exp_avg_sq, const c10::optional<at::Tensor>& exp_avg_sq_col,
              const c10::optional<at::Tensor>& exp_avg_res_row,
              const c10::optional<at::Tensor>& exp_avg_res_col,
              const c10::optional<at::Tensor>& master, double lr, double beta1, double beta2,
              double beta3, double eps1, double eps2, double clip_threshold, double weight_decay,
              bool stochastic_rounding, int64_t seed) {
  TORCH_CHECK(!grad.is_sparse(), "upguard CAME does not support sparse gradients (", grad.layout(),
              "); use a dense embedding or another optimizer for it");
  TORCH_CHECK(param.device().is_cpu() && grad.device().is_cpu(),
              "upguard CAME: the fused step runs on CPU tensors; the parameter is on ",
              param.device());
  TORCH_CHECK(grad.sizes() == param.sizes(), "upguard CAME: the gradient's shape ", grad.sizes(),
              " is not the parameter's ", param.sizes());
  const at::IntArrayRef shape = param.sizes();
  const bool factored = shape.size() >= 2;
  // A parameter that is not contiguous in C order (a channels-last weight) steps in a
  // contiguous copy that is copied back: the factoring follows the logical shape.
  at::Tensor work = param.is_contiguous() ? param : param.contiguous();
  const at::Tensor g = grad.contiguous();
  optim::CameTensor t;
  t.shape.assign(shape.begin(), shape.end());
  t.param = work.data_ptr();
  t.param_precision = PrecisionOf(param, "parameter");
  t.grad = g.data_ptr();
  t.grad_precision = PrecisionOf(grad, "gradient");
  t.m = State(exp_avg, shape, "exp_avg");
  if (factored) {
    const std::vector<int64_t> row(shape.begin(), shape.end() - 1);
    std::vector<int64_t> col(shape.begin(), shape.end() - 2);
    col.push_back(shape.back());
    t.r = State(exp_avg_sq, row, "exp_avg_sq_row");
    t.c = OptionalState(exp_avg_sq_col, col, "exp_avg_sq_col");
    t.big_r = OptionalState(exp_avg_res_row, row, "exp_avg_res_row");
    t.big_c = OptionalState(exp_avg_res_col, col, "exp_avg_res_col");
  } else {
    t.v = State(exp_avg_sq, shape, "exp_avg_sq");
  }
  t.master = OptionalState(master, shape, "master");
  t.stochastic = stochastic_rounding;
  t.seed = uint64_t(seed);
  optim::CameHyper hyper;
  hyper.lr = lr, hyper.beta1 = beta1, hyper.beta2 = beta2, hyper.beta3 = beta3;
  hyper.eps1 = eps1, hyper.eps2 = eps2, hyper.clip_threshold = clip_threshold;
  hyper.weight_decay = weight_decay;
  const optim::ParallelFor on_torch_threads =
      [](int64_t count, const std::function<void(int64_t, int64_t)>& body) {
        at::parallel_for(0, count, 1, body);
      };
  const Status status = optim::CameStep(hyper, t, on_torch_threads);
  TORCH_CHECK(status.ok(), "upguard ", status.message());
  if (!work.is_same(param)) param.copy_(work);
}

}  // namespace

TORCH_LIBRARY(upguard, m) {
  m.def(
      "came_step(Tensor(a!) param, Tensor grad, Tensor(b!) exp_avg, Tensor(c!) exp_avg_sq, "
      "Tensor(d!)? exp_avg_sq_col, Tensor(e!)? exp_avg_res_row, Tensor(f!)? exp_avg_res_col, "
      "Tensor(g!)? master, float lr, float beta1, float beta2, float beta3, float eps1, "
      "float eps2, float clip_threshold, float weight_decay, bool stochastic_rounding, "
      "int seed) -> ()");
}

TORCH_LIBRARY_IMPL(upguard, CPU, m) { m.impl("came_step", &CameStep); }

}  // namespace upguard::torch_adapter
