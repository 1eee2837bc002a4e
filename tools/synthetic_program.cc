// ProgramBuilder (synthetic_program.h): appends template ops with their dataflow.
#include "tools/synthetic_program.h"

#include "digest/digest.h"

namespace upguard::synthetic {
namespace {

int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t numel = 1;
  for (int64_t dim : shape) numel *= dim;
  return numel;
}

}  // namespace

ProgramBuilder::OpAdder& ProgramBuilder::OpAdder::Add(bool input, ArgKind kind,
                                                      std::string_view name, DType dtype,
                                                      std::vector<int64_t> shape, FlowArg flow) {
  ArgRecord arg;
  arg.kind = kind;
  arg.name = b_->Intern(name);
  arg.dtype = dtype;
  flow.numel = Numel(shape);
  arg.shape = std::move(shape);
  (input ? op_->record.inputs : op_->record.outputs).push_back(std::move(arg));
  (input ? op_->inputs : op_->outputs).push_back(flow);
  if (input) op_->texts.emplace_back();
  return *this;
}

ProgramBuilder::OpAdder& ProgramBuilder::OpAdder::In(std::string_view name, int slot, DType dtype,
                                                     std::vector<int64_t> shape) {
  return Add(true, ArgKind::kTensor, name, dtype, std::move(shape),
             FlowArg{Flow::kRead, slot, -1, 0});
}
ProgramBuilder::OpAdder& ProgramBuilder::OpAdder::Alias(std::string_view name, DType dtype,
                                                        std::vector<int64_t> shape) {
  return Add(true, ArgKind::kAlias, name, dtype, std::move(shape), FlowArg{});
}
ProgramBuilder::OpAdder& ProgramBuilder::OpAdder::Scalar(std::string_view name,
                                                         std::string_view text) {
  Add(true, ArgKind::kScalar, name, DType::kInvalid, {}, FlowArg{});
  op_->texts.back() = std::string(text);
  ArgRecord& arg = op_->record.inputs.back();
  arg.text = b_->Intern(text);
  arg.digest = DigestBytes(text.data(), text.size());
  return *this;
}
ProgramBuilder::OpAdder& ProgramBuilder::OpAdder::None(std::string_view name) {
  return Add(true, ArgKind::kNone, name, DType::kInvalid, {}, FlowArg{});
}
ProgramBuilder::OpAdder& ProgramBuilder::OpAdder::Out(int slot, DType dtype,
                                                      std::vector<int64_t> shape) {
  return Add(false, ArgKind::kTensor, "", dtype, std::move(shape),
             FlowArg{Flow::kCompute, slot, -1, 0});
}
ProgramBuilder::OpAdder& ProgramBuilder::OpAdder::OutCopy(int slot, int from, DType dtype,
                                                          std::vector<int64_t> shape) {
  return Add(false, ArgKind::kTensor, "", dtype, std::move(shape),
             FlowArg{Flow::kCopy, slot, from, 0});
}
ProgramBuilder::OpAdder& ProgramBuilder::OpAdder::OutView(int slot, int from, DType dtype,
                                                          std::vector<int64_t> shape) {
  return Add(false, ArgKind::kAlias, "", dtype, std::move(shape),
             FlowArg{Flow::kView, slot, from, 0});
}
ProgramBuilder::OpAdder& ProgramBuilder::OpAdder::OutUninit(DType dtype,
                                                            std::vector<int64_t> shape) {
  return Add(false, ArgKind::kUninit, "", dtype, std::move(shape), FlowArg{});
}

ProgramBuilder::OpAdder ProgramBuilder::Add(std::vector<TemplateOp>* list, std::string_view name,
                                            uint32_t depth, Phase phase) {
  TemplateOp& op = list->emplace_back();
  op.name = std::string(name);
  op.record.op = Intern(name);
  op.record.module = Intern(module_);
  op.record.call_site = Intern(site_);
  op.record.node = phase == Phase::kBackward ? Intern(node_) : kEmptyString;
  op.record.phase = phase;
  op.record.depth = depth;
  return OpAdder(this, &op);
}

ProgramBuilder::OpAdder ProgramBuilder::Op(std::string_view name, uint32_t depth) {
  return Add(&program_.ops, name, depth, phase_);
}

ProgramBuilder::OpAdder ProgramBuilder::Pad(std::string_view name) {
  return Add(&program_.padding, name, 0, Phase::kOther);
}

}  // namespace upguard::synthetic
