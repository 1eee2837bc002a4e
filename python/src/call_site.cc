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

}  // namespace

void ConfigureCallSites(std::vector<std::string> prefixes, std::string cwd) {
  std::lock_guard<std::mutex> lock(config_mu);
  skip_prefixes = std::move(prefixes);
  cwd_prefix = cwd.empty() ? "" : cwd + "/";
}

std::string CurrentCallSite(bool* input_pipeline) {
  if (input_pipeline != nullptr) *input_pipeline = false;
  // Threads that never ran Python (intra-op pools) have no frame; never take the GIL there.
  if (!Py_IsInitialized() || PyGILState_GetThisThreadState() == nullptr) return "";
  PyGILState_STATE gil = PyGILState_Ensure();
  std::string site;
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    if (file != nullptr && IsUserFile(file)) {
      site = Shorten(file) + ":" + std::to_string(PyFrame_GetLineNumber(frame));
    }
    if (file != nullptr && input_pipeline != nullptr && IsInputPipelineFile(file)) {
      *input_pipeline = true;
    }
    Py_DECREF(code);
    if (!site.empty()) break;
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  if (PyErr_Occurred()) PyErr_Clear();
  PyGILState_Release(gil);
  return site;
}

}  // namespace upguard::torch_adapter
