#include "capture.h"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <mutex>

#include "capture/safetensors.h"

namespace upguard::torch_adapter {
namespace {

// How many ops may end between an op's entry and its own end (its nested ops): an op entered
// when the step had recorded N ops ends with an index in [N, N + kMaxNested] (and likewise a
// position).
constexpr uint64_t kMaxNested = 1024;

struct CaptureState {
  std::mutex mu;
  std::optional<CaptureSelector> selector;  // set at Start, read-only while recording
  bool hold_all = false;                    // record --against: any op may be the divergence
  std::string run_dir;
  int rank = 0;
  std::atomic<uint64_t> captured{0};
  std::vector<std::string> files;  // guarded by mu
};

CaptureState& State() {
  static auto* state = new CaptureState();  // used by late callbacks: never destroyed
  return *state;
}

}  // namespace

void ConfigureCapture(const std::optional<CaptureSelector>& selector, const std::string& run_dir,
                      int rank, bool hold_all) {
  CaptureState& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  // A selector for another rank selects nothing here (diff --explain re-runs every rank of a
  // torchrun run; only the divergent one captures and stops).
  state.selector = selector && selector->rank && *selector->rank != rank ? std::nullopt : selector;
  state.hold_all = hold_all;
  state.run_dir = run_dir;
  state.rank = rank;
  state.captured.store(0);
  state.files.clear();
}

HeldInputs HoldInputs(const OpInfo& info, const ArgBatch& batch,
                      const std::vector<ArgRecord>& records, int64_t step, uint64_t ops_in_step,
                      uint64_t compared_in_step, std::string_view op, std::string_view module,
                      Phase phase) {
  HeldInputs held;
  CaptureState& state = State();
  const std::optional<CaptureSelector>& selector = state.selector;
  const bool selected = selector && state.captured.load() < selector->limit &&
                        selector->IndexIn(ops_in_step, kMaxNested) &&
                        selector->PositionIn(compared_in_step, kMaxNested) &&
                        selector->MayMatch(step, op, module, phase);
  if (!selected && !state.hold_all) return held;
  held.held = true;
  held.tensors.resize(records.size());
  held.digests.resize(records.size());
  for (size_t arg_idx = 0; arg_idx < records.size() && arg_idx < batch.tensors.size(); ++arg_idx) {
    const at::Tensor* tensor = batch.tensors[arg_idx];
    if (records[arg_idx].kind != ArgKind::kTensor || tensor == nullptr || !IsReadable(*tensor)) {
      continue;
    }
    // The op may overwrite what it writes before we see it again: copy those now.
    held.tensors[arg_idx] = info.writes_inputs ? tensor->clone() : *tensor;
    held.digests[arg_idx] = records[arg_idx].digest;
  }
  return held;
}

namespace {

// Requires state.mu. Writes the capture file of one op; returns its path, or "" (and says why
// on stderr) when it could not.
std::string WriteCaptureLocked(CaptureState& state, const RecordedOp& recorded,
                               const OpEvent& event, const HeldInputs& held,
                               const ArgBatch& outputs,
                               const std::vector<Digest128>& output_digests, const char* why) {
  std::vector<SafetensorsInput> tensors;
  std::vector<std::pair<std::string, std::string>> meta = {
      {"upguard.op", std::string(event.op)},
      {"upguard.module", std::string(event.module)},
      {"upguard.call_site", std::string(event.call_site)},
      {"upguard.node", std::string(event.node)},
      {"upguard.phase", std::string(PhaseName(event.phase))},
      {"upguard.step", std::to_string(recorded.step)},
      {"upguard.index", std::to_string(recorded.index)},
      {"upguard.rank", std::to_string(state.rank)},
      {"upguard.capture", why},
  };
  auto add = [&](const std::string& name, const at::Tensor& tensor, const Digest128& digest,
                 const char* read) {
    tensors.push_back(SafetensorsInput{name, ViewOf(tensor)});
    meta.emplace_back(name + ".digest", digest.Hex());
    meta.emplace_back(name + ".read", read);
  };
  for (size_t arg_idx = 0; arg_idx < held.tensors.size(); ++arg_idx) {
    if (!held.tensors[arg_idx].defined()) continue;
    add("input." + std::to_string(arg_idx), held.tensors[arg_idx], held.digests[arg_idx],
        "before the op ran");
  }
  for (size_t arg_idx = 0; arg_idx < output_digests.size() && arg_idx < outputs.tensors.size();
       ++arg_idx) {
    const at::Tensor* tensor = outputs.tensors[arg_idx];
    if (outputs.args[arg_idx].kind != ArgKind::kTensor || tensor == nullptr ||
        !IsReadable(*tensor)) {
      continue;
    }
    add("output." + std::to_string(arg_idx), *tensor, output_digests[arg_idx], "after the op ran");
  }
  std::error_code error;
  std::filesystem::create_directories(state.run_dir + "/captures", error);
  const std::string path = CapturePath(state.run_dir, state.rank, recorded.step, recorded.index);
  const Status status = WriteSafetensors(path, tensors, meta);
  if (!status.ok()) {
    std::fprintf(stderr, "upguard: capture failed, training continues: %s\n",
                 status.message().c_str());
    return "";
  }
  state.files.push_back(path);
  return path;
}

}  // namespace

bool WriteCaptureIfSelected(const RecordedOp& recorded, const OpEvent& event,
                            const HeldInputs& held, const ArgBatch& outputs,
                            const std::vector<Digest128>& output_digests) {
  CaptureState& state = State();
  if (!held.held || !recorded.written || !state.selector) return false;
  const CaptureSelector& selector = *state.selector;
  if (!selector.Matches(recorded.step, recorded.index, recorded.position, event.op, event.module,
                        event.phase)) {
    return false;
  }
  std::lock_guard<std::mutex> lock(state.mu);
  if (state.captured.load() >= selector.limit) return false;
  if (WriteCaptureLocked(state, recorded, event, held, outputs, output_digests,
                         selector.ToString().c_str())
          .empty()) {
    return false;
  }
  const uint64_t captured = state.captured.fetch_add(1) + 1;
  return selector.stop && captured >= selector.limit;
}

std::string WriteDivergenceCapture(const RecordedOp& recorded, const OpEvent& event,
                                   const HeldInputs& held, const ArgBatch& outputs,
                                   const std::vector<Digest128>& output_digests) {
  CaptureState& state = State();
  if (!held.held) return "";
  std::lock_guard<std::mutex> lock(state.mu);
  return WriteCaptureLocked(state, recorded, event, held, outputs, output_digests,
                            "the first divergence from the --against reference");
}

std::string CaptureSummary() {
  CaptureState& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  std::string text = "captured " + std::to_string(state.files.size()) + " op(s)";
  if (state.selector) text += " (" + state.selector->ToString() + ")";
  for (const std::string& file : state.files) text += "\n  " + file;
  return text;
}

}  // namespace upguard::torch_adapter
