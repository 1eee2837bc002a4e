// The PyTorch adapter's torch-free interface, used by the pybind11 module (module.cc).
//
// Start() installs ATen RecordFunction global callbacks that feed every operator to a core
// upguard::Recorder; Stop() removes them and closes the trace. Module scopes come from Python
// (global nn.Module hooks call EnterModule / ExitModule).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recorder/capture_selector.h"
#include "upguard/recorder.h"
#include "upguard/status.h"

namespace upguard::torch_adapter {

// Online mode with several ranks (`record --against` under torchrun). A rank that diverges
// tells the others through torch.distributed's store (`notice`, with its online.json) and
// records on to the end of the step, so that no rank waits forever in a collective it left;
// at each step's end every rank waits for the others (`agree`), learns whether one diverged,
// and if so all close their traces and stop together.
struct DistributedOnline {
  std::function<void(const std::string& divergence_json)> notice;
  std::function<bool(int64_t step)> agree;  // true: some rank diverged, stop now
  // This rank closed its trace after `agree(step)` said stop: waits (bounded) until every rank
  // has, so that the launcher, seeing one rank leave, kills none whose trace is still open.
  std::function<void(int64_t step)> depart;
};

struct AdapterOptions {
  RecorderOptions recorder;
  // Python frames whose file starts with one of these are not user code (torch, upguard).
  std::vector<std::string> skip_prefixes;
  std::string cwd;  // call sites under it are shown relative to it
  // Ops whose tensors are written to run_dir/captures/ (capture.h); none when absent.
  std::optional<CaptureSelector> capture;
  // With recorder.against: record on after the first divergence instead of stopping.
  bool continue_after_divergence = false;
  std::optional<DistributedOnline> distributed_online;  // with recorder.against, world > 1
  // The process stops (kExitAfterSteps) once this step begins: the end of the steps to record
  // (`stop_after_steps`, what diff --zoom's re-runs ask). Absent: the program runs to its end.
  std::optional<int64_t> stop_at_step;
};

// The exit status of a process stopped at its first divergence from the --against reference
// (the diff's "diverged").
inline constexpr int kExitDivergedOnline = 1;

// The exit status of a process stopped by a `--capture ...,stop` selector once it captured.
inline constexpr int kExitAfterCapture = 0;

// The exit status of a process stopped after the last step it was asked to record.
inline constexpr int kExitAfterSteps = 0;

Status Start(const AdapterOptions& options);
// `final_engine_meta_json` ("" = none): engine facts read again at the end (thread counts the
// program set after recording started), merged into meta.json.
// `died`: the program is ending by an uncaught exception; its last step is left unended.
Status Stop(const std::string& final_engine_meta_json = "", bool died = false);
bool Active();

// An explicit step boundary. After the first call, Optimizer.step no longer ends steps.
void MarkStep();
// The program resumed from its checkpoint of step `step` (upguard.resume_point): the current
// step ends and `step` begins (Recorder::SkipTo). No-op unless `step` is after the current one.
void ResumeAt(int64_t step);
int64_t CurrentStep();
// Recording, and the current step is a fingerprint step (`upguard record --fingerprint`).
bool FingerprintStep();
// The outermost optimizer step on this thread returned and no scope callback ended the step
// (a fingerprint step follows none: op_callbacks.h): the step ends here, unless the program
// marks its steps itself (upguard/_optimizer.py).
void OptimizerStepDone();
uint64_t OpsRecorded();
// Where the latest recording's trace is: in its staging directory until the run moved into
// run_dir (Recorder::trace_path); "" when none.
std::string TracePath();
// Its directory: where the recording writes (online.ranks.json, resume snapshots).
std::string WriteDir();

// A tensor handed over from Python: its name and the address of its c10::TensorImpl
// (`Tensor._cdata`; the module does not use torch's Python bindings), alive during the call.
// A tensor upguard cannot read (another device, an unsupported dtype, a tensor subclass
// without storage) is recorded with its shape only.
struct PyTensorRef {
  std::string name;
  uintptr_t impl = 0;
};

// The tensors entering the outermost module's forward, the step's batch: recorded as the
// inputs of a pseudo-op `upguard::batch`, so the diff can say "the input batch differs".
// Called with the GIL held; the tensors must stay alive during the call.
void RecordModelInputs(const std::vector<PyTensorRef>& tensors);

// The tensors a backward starts from (the loss), in a fingerprint step only (`upguard record
// --fingerprint`): the inputs of a pseudo-op `upguard::loss`. Called with the GIL held.
void RecordLoss(const std::vector<PyTensorRef>& tensors);

// Forward module scope of the calling thread ("blocks.1.mlp.act"), for the module call whose
// Python frame is `frame` (compared by address only; the caller keeps it alive while the call
// is on the stack). ExitModule pops that call and any above it (whose forward raised); a call
// already popped is a no-op. Calls whose frame left the Python call chain are also dropped
// when the next top-level op reads its call site (call_site.h).
void EnterModule(const std::string& path, const void* frame);
void ExitModule(const void* frame);
// Whether an autograd node runs on the calling thread: a module call that begins now is a
// forward recomputed in backward (activation checkpointing), not a new model call. Always false
// in a fingerprint step, which follows no autograd node (op_callbacks.h): an outermost module
// recomputed there has its batch recorded again, in both runs alike.
bool InBackward();

// Ops no RecordFunction announces, announced from Python (python/upguard/_compiled.py): a
// torch.compile region at its boundary and the kernels Inductor generated for it. Each argument
// is a tensor (`tensor`: its `_cdata`, kept alive by the caller during the call) or a text
// (`text`, for a digest of generated code); `role` says what the op does with a tensor.
enum class AnnouncedRole : uint8_t {
  kRead = 0,     // read only
  kWritten = 1,  // read, then written in place (recorded again as an output after the op)
  kOutput = 2,   // written without being read (its old contents are not recorded)
};
struct AnnouncedArg {
  std::string name;
  uintptr_t tensor = 0;
  std::string text;
  AnnouncedRole role = AnnouncedRole::kRead;
};
// Returns a handle for ExitAnnouncedOpFromHost, which must follow on the same thread after the
// op ran (also when it raised: `results` empty); ops run in between nest inside it. Called with
// the GIL held.
// `call_site` ("file:line", may be empty) replaces the one read from the Python frames.
uint64_t EnterAnnouncedOpFromHost(const std::string& name, const std::vector<AnnouncedArg>& inputs,
                                  const std::string& call_site);
void ExitAnnouncedOpFromHost(uint64_t handle, const std::vector<uintptr_t>& results);
// A tensor made without an ATen op (Inductor's generated code allocates its buffers directly):
// its memory holds no values until an op writes it, so it is not digested before (`_cdata`).
void NoteUninitialized(uintptr_t tensor);
// Counts torch.compile's compilations in progress (dynamo's start and end callbacks): meanwhile
// no op is recorded, they run on fake tensors.
void NoteCompiling(bool compiling);

// What a tensor of the model is to it (python/upguard/_state.py numbers them alike).
enum class TensorRole : uint8_t {
  kParameter = 0,
  kBuffer = 1,
  kGradient = 2,
  kOptimizerState = 3,
};

// One tensor of the model: its name in the model ("blocks.0.ln.weight", "... .grad",
// "exp_avg of blocks.0.ln.weight") and the address of its c10::TensorImpl (`Tensor._cdata`),
// alive while the sink runs.
struct ModelTensorRef {
  std::string_view name;
  TensorRole role = TensorRole::kParameter;
  uintptr_t impl = 0;
};
using ModelTensorSink = std::function<void(const ModelTensorRef&)>;
// Set once by the module: a function that hands every tensor of the model to its sink, with
// the GIL held (model_state.h).
void SetModelTensorSource(std::function<void(const ModelTensorSink&)> source);
// Reads the model's tensors again for naming op arguments (tensor_names.h): a new outermost
// module ran. Called with the GIL held.
void RefreshTensorNames();

}  // namespace upguard::torch_adapter
