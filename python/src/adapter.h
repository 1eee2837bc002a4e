// The PyTorch adapter's torch-free interface, used by the pybind11 module (module.cc).
//
// Start() installs ATen RecordFunction global callbacks that feed every operator to a core
// upguard::Recorder; Stop() removes them and closes the trace. Module scopes come from Python
// (global nn.Module hooks call EnterModule / ExitModule).
#pragma once

#include <string>
#include <vector>

#include "upguard/recorder.h"
#include "upguard/status.h"

namespace upguard::torch_adapter {

struct AdapterOptions {
  RecorderOptions recorder;
  // Python frames whose file starts with one of these are not user code (torch, upguard).
  std::vector<std::string> skip_prefixes;
  std::string cwd;  // call sites under it are shown relative to it
};

Status Start(const AdapterOptions& options);
Status Stop();
bool Active();

// An explicit step boundary. After the first call, Optimizer.step no longer ends steps.
void MarkStep();
int64_t CurrentStep();
uint64_t OpsRecorded();
std::string TracePath();

// Forward module scope of the calling thread ("blocks.1.mlp.act").
void EnterModule(const std::string& path);
void ExitModule();

}  // namespace upguard::torch_adapter
