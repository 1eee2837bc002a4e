// A training engine that is not PyTorch, recording through upguard's public API only: it
// includes nothing but <upguard/recorder.h> and links one library (upguard_recorder).
//
//   tiny_engine RUN_DIR [--plant]      # 3 steps of a 2-layer linear model trained with SGD
//   upguard diff runs/a runs/b          # --plant changes layer1's activation from step 1 on
//
// Each step: forward (two matmuls with a ReLU between, a squared loss), backward, and an
// in-place SGD update whose inputs are digested before it writes them.
#include <upguard/recorder.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<float> data;
  int64_t sizes[2] = {0, 0};
  int64_t strides[2] = {0, 1};

  Matrix(int64_t r, int64_t c) : rows(r), cols(c), data(static_cast<size_t>(r * c)) {
    sizes[0] = r;
    sizes[1] = c;
    strides[0] = c;
  }
  float& at(int64_t r, int64_t c) { return data[static_cast<size_t>(r * cols + c)]; }
  upguard::TensorView view() const {
    return {upguard::DType::kFloat32, sizes, strides, 2, data.data()};
  }
};

Matrix MatMul(Matrix& a, Matrix& b) {
  Matrix out(a.rows, b.cols);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t j = 0; j < b.cols; ++j) {
      float sum = 0;
      for (int64_t k = 0; k < a.cols; ++k) sum += a.at(i, k) * b.at(k, j);
      out.at(i, j) = sum;
    }
  }
  return out;
}

Matrix Transposed(Matrix& m) {
  Matrix out(m.cols, m.rows);
  for (int64_t i = 0; i < m.rows; ++i) {
    for (int64_t j = 0; j < m.cols; ++j) out.at(j, i) = m.at(i, j);
  }
  return out;
}

// Records `name` with `inputs` and `outputs` (digested now), in `module`.
void Record(upguard::Recorder& recorder, const char* name, upguard::Phase phase, const char* module,
            std::vector<upguard::Arg> inputs, std::vector<upguard::Arg> outputs) {
  upguard::OpEvent op;
  op.op = name;
  op.phase = phase;
  op.module = module;
  op.call_site = "tiny_engine.cc";
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  recorder.Record(op);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: tiny_engine RUN_DIR [--plant]\n");
    return 2;
  }
  const bool plant = argc > 2 && std::strcmp(argv[2], "--plant") == 0;
  upguard::RecorderOptions options;
  options.run_dir = argv[1];
  options.engine_meta_json = R"({"engine": "tiny_engine", "argv": ["tiny_engine"]})";
  upguard::StatusOr<std::unique_ptr<upguard::Recorder>> opened = upguard::Recorder::Open(options);
  if (!opened.ok()) {
    std::fprintf(stderr, "tiny_engine: %s\n", opened.status().message().c_str());
    return 2;
  }
  upguard::Recorder& recorder = **opened;
  using upguard::Arg;
  using upguard::Phase;

  Matrix x(4, 3), w1(3, 5), w2(5, 1), target(4, 1);
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = std::sin(0.7f * static_cast<float>(i));
  for (size_t i = 0; i < w1.data.size(); ++i) w1.data[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  for (size_t i = 0; i < w2.data.size(); ++i) w2.data[i] = 0.2f - 0.05f * static_cast<float>(i);
  for (size_t i = 0; i < target.data.size(); ++i) target.data[i] = 0.5f;

  for (int step = 0; step < 3; ++step) {
    // forward
    Matrix h = MatMul(x, w1);
    Record(recorder, "tiny::matmul", Phase::kForward, "layer1",
           {Arg::Tensor("x", x.view()), Arg::Tensor("weight", w1.view())},
           {Arg::Tensor("out", h.view())});
    Matrix a = h;
    const float slope = plant && step >= 1 ? 0.01f : 0.0f;  // --plant: a leaky ReLU
    for (float& v : a.data) v = v > 0 ? v : slope * v;
    Record(recorder, "tiny::relu", Phase::kForward, "layer1.act",
           {Arg::Tensor("self", h.view()), Arg::Scalar("negative_slope", std::to_string(slope))},
           {Arg::Tensor("out", a.view())});
    Matrix y = MatMul(a, w2);
    Record(recorder, "tiny::matmul", Phase::kForward, "layer2",
           {Arg::Tensor("x", a.view()), Arg::Tensor("weight", w2.view())},
           {Arg::Tensor("out", y.view())});
    // backward of 0.5 * sum((y - target)^2)
    Matrix dy = y;
    for (size_t i = 0; i < dy.data.size(); ++i) dy.data[i] -= target.data[i];
    Matrix at = Transposed(a);
    Matrix dw2 = MatMul(at, dy);
    Record(recorder, "tiny::matmul_backward", Phase::kBackward, "layer2",
           {Arg::Tensor("x", a.view()), Arg::Tensor("grad", dy.view())},
           {Arg::Tensor("grad_weight", dw2.view())});
    // SGD on w2, in place: its inputs are digested before the update writes them.
    std::vector<Arg> update = {Arg::Tensor("param", w2.view()), Arg::Tensor("grad", dw2.view()),
                               Arg::Scalar("lr", "0.1")};
    std::vector<upguard::ArgRecord> before = recorder.DigestArgs(update);
    for (size_t i = 0; i < w2.data.size(); ++i) w2.data[i] -= 0.1f * dw2.data[i];
    upguard::OpEvent sgd;
    sgd.op = "tiny::sgd_";
    sgd.phase = Phase::kOptimizer;
    sgd.outputs = {Arg::Tensor("param", w2.view())};
    recorder.Record(sgd, std::move(before));
    recorder.MarkStep();
  }
  const upguard::Status closed = recorder.Close();
  if (!closed.ok()) {
    std::fprintf(stderr, "tiny_engine: %s\n", closed.message().c_str());
    return 2;
  }
  std::printf("tiny_engine: recorded 3 steps into %s\n", argv[1]);
  return 0;
}
