// The op template of one synthetic training step (a GPT-like model) and its dataflow, for
// tools/synthetic_trace.cc. Internal to the synthetic-trace tool and its tests.
//
//   ProgramBuilder builder(&intern);              // intern: string -> StringId (the writer's)
//   Program program = BuildGptProgram(10'000, builder);   // about 10,000 ops per step
//
// Every tensor lives in a numbered slot holding its digest. An op reads the slots of its tensor
// inputs and writes the slots of its outputs: a computed output's digest is a hash of the op
// and everything it read, so changing one value changes every later value that depends on it
// (as in training, where a changed step changes the weights and so every later step).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/records.h"

namespace upguard::synthetic {

// How an argument moves values between slots.
enum class Flow : uint8_t {
  kNone,     // no value: scalar, none, uninit, or an input the op does not read (alias)
  kRead,     // tensor input: its digest is the slot's value
  kCompute,  // tensor output: slot = hash(op, output index, values read)
  kCopy,     // tensor output: slot = value of `from` (a composite op returns its kernel's result)
  kView,     // alias output: slot = a view of `from` (a new tensor when read later)
};

struct FlowArg {
  Flow flow = Flow::kNone;
  int slot = -1;
  int from = -1;
  int64_t numel = 0;  // for statistics
};

struct TemplateOp {
  OpRecord record;  // names, phase, depth, kinds, shapes; digests are filled in per step
  std::vector<FlowArg> inputs;
  std::vector<FlowArg> outputs;  // parallel to record.outputs
  std::string name;
  std::vector<std::string> texts;  // of the inputs, for scalars (a plant changes one)
};

struct Program {
  std::vector<TemplateOp> ops;      // one step, in completion order (nested ops first)
  std::vector<TemplateOp> padding;  // cycled after `ops` to reach the requested step size
  int num_slots = 0;
  std::vector<int> parameter_slots;  // initialized from the seed before step 0
  int batch_slot = -1;               // new data every step
  int scale_slot = -1;               // a constant tensor read by the structural plant's extra op
};

// Appends ops to a Program; strings go through `intern` (TraceWriter::Intern).
class ProgramBuilder {
 public:
  using InternFn = std::function<StringId(std::string_view)>;
  explicit ProgramBuilder(InternFn intern) : intern_(std::move(intern)) {}

  // Fluent adder for one op's arguments.
  class OpAdder {
   public:
    OpAdder(ProgramBuilder* builder, TemplateOp* op) : b_(builder), op_(op) {}
    OpAdder& In(std::string_view name, int slot, DType dtype, std::vector<int64_t> shape);
    OpAdder& Alias(std::string_view name, DType dtype, std::vector<int64_t> shape);
    OpAdder& Scalar(std::string_view name, std::string_view text);
    OpAdder& None(std::string_view name);
    OpAdder& Out(int slot, DType dtype, std::vector<int64_t> shape);
    OpAdder& OutCopy(int slot, int from, DType dtype, std::vector<int64_t> shape);
    OpAdder& OutView(int slot, int from, DType dtype, std::vector<int64_t> shape);
    OpAdder& OutUninit(DType dtype, std::vector<int64_t> shape);

   private:
    OpAdder& Add(bool input, ArgKind kind, std::string_view name, DType dtype,
                 std::vector<int64_t> shape, FlowArg flow);
    ProgramBuilder* b_;
    TemplateOp* op_;
  };

  // Scope for the ops that follow: module path, call site, phase, autograd node.
  void At(std::string module, std::string site, Phase phase, std::string node = "") {
    module_ = std::move(module);
    site_ = std::move(site);
    phase_ = phase;
    node_ = std::move(node);
  }
  OpAdder Op(std::string_view name, uint32_t depth = 0);
  OpAdder Pad(std::string_view name);  // an op of the padding cycle (phase other)
  int Slot() { return program_.num_slots++; }
  int Parameter() {
    program_.parameter_slots.push_back(Slot());
    return program_.parameter_slots.back();
  }
  StringId Intern(std::string_view s) { return intern_(s); }
  Program& program() { return program_; }

 private:
  OpAdder Add(std::vector<TemplateOp>* list, std::string_view name, uint32_t depth, Phase phase);
  InternFn intern_;
  Program program_;
  std::string module_, site_, node_;
  Phase phase_ = Phase::kOther;
};

// A GPT-like step: embeddings, transformer blocks (layer norm, attention, MLP, with the nested
// kernels torch records inside linear/matmul/softmax), the loss, their backward nodes and an
// AdamW update per parameter; as many blocks as fit in `ops_per_step` (at least one). The
// padding cycle is a few metric ops (phase other) on the loss.
Program BuildGptProgram(uint64_t ops_per_step, ProgramBuilder& builder);

}  // namespace upguard::synthetic
