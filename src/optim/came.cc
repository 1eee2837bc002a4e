#include "optim/came.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace upguard::optim {

// The kernel's builds (came_kernel.h).
namespace generic {
void RunCame(const CameHyper& hyper, const CameTensor& tensor, const ParallelFor& parallel);
}
#if UPGUARD_OPTIM_AVX2
namespace avx2 {
void RunCame(const CameHyper& hyper, const CameTensor& tensor, const ParallelFor& parallel);
}
#endif

namespace {

Status Check(const CameHyper& h, const CameTensor& t, bool factored) {
  auto bad = [](const std::string& what) { return InvalidArgument("CAME: " + what); };
  if (!(h.lr > 0) || !std::isfinite(h.lr)) return bad("lr must be a positive number");
  for (double beta : {h.beta1, h.beta2, h.beta3}) {
    if (!(beta >= 0 && beta <= 1)) return bad("betas must lie in [0, 1]");
  }
  if (!(h.eps1 >= 0) || !(h.eps2 >= 0)) return bad("eps must be >= 0");
  if (!(h.clip_threshold > 0)) return bad("clip_threshold must be > 0");
  if (!(h.weight_decay >= 0)) return bad("weight_decay must be >= 0");
  int64_t numel = 1;
  for (int64_t size : t.shape) {
    if (size < 0) return bad("a negative size in the shape");
    numel *= size;
  }
  if (numel == 0) return Status::Ok();  // nothing to update, nothing read
  if (t.param == nullptr || t.grad == nullptr || t.m == nullptr) {
    return bad("param, grad and m are required");
  }
  if (factored && (!t.r || !t.c || !t.big_r || !t.big_c)) {
    return bad("a tensor of 2 or more dims needs the factored state r, c, R, C");
  }
  if (!factored && t.v == nullptr) return bad("a tensor of 0 or 1 dims needs the state v");
  if (t.master != nullptr && t.param_precision == Precision::kFloat32) {
    return bad("a float32 master copy of a float32 parameter: the parameter is its own master");
  }
  if (t.stochastic && (t.param_precision != Precision::kBFloat16 || t.master != nullptr)) {
    return bad("stochastic rounding is for bfloat16 parameters without a master copy");
  }
  return Status::Ok();
}

}  // namespace

ParallelFor SerialFor() {
  return [](int64_t count, const std::function<void(int64_t, int64_t)>& body) {
    if (count > 0) body(0, count);
  };
}

int64_t RowsPerBlock(int64_t rows, int64_t cols) {
  const int64_t for_size = (kElementsPerBlock + cols - 1) / std::max<int64_t>(cols, 1);
  return std::clamp<int64_t>(for_size, 1, std::max<int64_t>(rows, 1));
}

bool HasAvx2Build() {
#if UPGUARD_OPTIM_AVX2
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

Status CameStepWith(Build build, const CameHyper& hyper, const CameTensor& tensor,
                    const ParallelFor& parallel) {
  const bool factored = tensor.shape.size() >= 2;
  RETURN_IF_ERROR(Check(hyper, tensor, factored));
  for (int64_t size : tensor.shape) {
    if (size == 0) return Status::Ok();
  }
#if UPGUARD_OPTIM_AVX2
  if (build == Build::kAvx2) {
    if (!HasAvx2Build()) return FailedPrecondition("CAME: this CPU has no AVX2 and FMA");
    avx2::RunCame(hyper, tensor, parallel);
    return Status::Ok();
  }
#else
  if (build == Build::kAvx2) return FailedPrecondition("CAME: built without its AVX2 kernel");
#endif
  generic::RunCame(hyper, tensor, parallel);
  return Status::Ok();
}

Status CameStep(const CameHyper& hyper, const CameTensor& tensor, const ParallelFor& parallel) {
  return CameStepWith(HasAvx2Build() ? Build::kAvx2 : Build::kGeneric, hyper, tensor, parallel);
}

}  // namespace upguard::optim
