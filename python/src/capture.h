// Targeted capture: the full tensors of the ops a CaptureSelector picks, written as safetensors
// files under RUN_DIR/captures/ (docs/formats/capture.md), never whole-run dumps.
//
// An op's index in its step is known only when it ends (ops are numbered in completion order),
// so at entry an op whose other terms match holds on to its inputs: references, or copies of the
// inputs the op writes (in-place and out= ops), taken before it runs. Ops that cannot reach the
// selected index any more (the step has already recorded more ops) hold nothing. At exit, if the
// op is selected, its held inputs and its outputs are written, named by their position in the
// trace record ("input.0", "output.0") with the record's digests in the file's metadata.
//
//   ConfigureCapture(selector, run_dir, rank);               // at Start
//   HeldInputs held = HoldInputs(info, batch, ...);           // at op entry
//   WriteCaptureIfSelected(recorded, event, held, ...);       // at op exit
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

#include "ivalue_args.h"
#include "op_info.h"
#include "recorder/capture_selector.h"
#include "upguard/recorder.h"

namespace upguard::torch_adapter {

struct HeldInputs {
  bool held = false;
  std::vector<at::Tensor> tensors;  // per input record; undefined where not a readable tensor
  std::vector<Digest128> digests;
};

// Installs (or with nullopt removes) the selector for the next recording. `hold_all`: every op
// holds its inputs, because any may turn out to be the divergence (record --against).
void ConfigureCapture(const std::optional<CaptureSelector>& selector, const std::string& run_dir,
                      int rank, bool hold_all);

// At op entry, after the inputs were digested into `records`.
HeldInputs HoldInputs(const OpInfo& info, const ArgBatch& batch,
                      const std::vector<ArgRecord>& records, int64_t step, uint64_t ops_in_step,
                      uint64_t compared_in_step, std::string_view op, std::string_view module,
                      Phase phase);

// At op exit, after Record() placed the op at `recorded`. True when the selector is exhausted
// and asked to stop the program (the caller closes the recording and exits).
bool WriteCaptureIfSelected(const RecordedOp& recorded, const OpEvent& event,
                            const HeldInputs& held, const ArgBatch& outputs,
                            const std::vector<Digest128>& output_digests);

// Writes the capture of the op that diverged from the reference (record --against), whatever
// the selector says; returns the file, or "" when it could not be written.
std::string WriteDivergenceCapture(const RecordedOp& recorded, const OpEvent& event,
                                   const HeldInputs& held, const ArgBatch& outputs,
                                   const std::vector<Digest128>& output_digests);

// "captured 1 op to DIR/captures (step=2,index=5,limit=1,stop)": for the stop message.
std::string CaptureSummary();

}  // namespace upguard::torch_adapter
