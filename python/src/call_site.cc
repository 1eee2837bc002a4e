#include "call_site.h"

#include <Python.h>
#include <frameobject.h>

#include <cstring>
#include <mutex>

namespace upguard::torch_adapter {
namespace {

std::mutex config_mu;
std::vector<std::string> skip_prefixes;  // guarded by config_mu for writes; read under the GIL
std::string cwd_prefix;

bool IsUserFile(const char* file) {
  if (file[0] == '<') return false;  // <frozen importlib._bootstrap>, <string>
  for (const std::string& prefix : skip_prefixes) {
    if (std::strncmp(file, prefix.c_str(), prefix.size()) == 0) return false;
  }
  return true;
}

bool IsInputPipelineFile(const char* file) {
  return std::strstr(file, "/torch/utils/data/") != nullptr ||
         std::strstr(file, "/torch/multiprocessing/") != nullptr ||
         std::strstr(file, "/multiprocessing/") != nullptr;
}

std::string Shorten(const char* file) {
  if (!cwd_prefix.empty() && std::strncmp(file, cwd_prefix.c_str(), cwd_prefix.size()) == 0) {
    return file + cwd_prefix.size();
  }
  return file;
}

// Whether `target` is a frame of the current Python call chain. Called with the GIL held.
bool OnCallChain(const void* target) {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr && frame != target) {
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  const bool found = frame != nullptr;
  Py_XDECREF(frame);
  return found;
}

}  // namespace

void ConfigureCallSites(std::vector<std::string> prefixes, std::string cwd) {
  std::lock_guard<std::mutex> lock(config_mu);
  skip_prefixes = std::move(prefixes);
  cwd_prefix = cwd.empty() ? "" : cwd + "/";
}

std::string CurrentCallSite() { return ReadPythonContext({}).call_site; }

PythonContext ReadPythonContext(const std::vector<ModuleCall>& modules) {
  PythonContext context;
  context.running_modules = modules.size();
  // Threads that never ran Python (intra-op pools) have no frame; never take the GIL there.
  if (!Py_IsInitialized() || PyGILState_GetThisThreadState() == nullptr) return context;
  PyGILState_STATE gil = PyGILState_Ensure();
  const void* innermost = modules.empty() ? nullptr : modules.back().frame;
  bool innermost_found = innermost == nullptr;
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr && (context.call_site.empty() || !innermost_found)) {
    innermost_found = innermost_found || frame == innermost;
    if (context.call_site.empty()) {
      PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
      const char* file = PyUnicode_AsUTF8(code->co_filename);
      if (file != nullptr && IsUserFile(file)) {
        context.call_site = Shorten(file) + ":" + std::to_string(PyFrame_GetLineNumber(frame));
      }
      if (file != nullptr && IsInputPipelineFile(file)) context.input_pipeline = true;
      Py_DECREF(code);
    }
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  if (!innermost_found) {
    // Rare: the innermost call ended by an exception. The innermost call still on the chain
    // runs, and so do the calls outside it.
    size_t& running = context.running_modules;
    do {
      --running;
    } while (running > 0 && !OnCallChain(modules[running - 1].frame));
  }
  if (PyErr_Occurred()) PyErr_Clear();
  PyGILState_Release(gil);
  return context;
}

}  // namespace upguard::torch_adapter
