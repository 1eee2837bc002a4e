#include "call_site.h"

#include <Python.h>
#include <frameobject.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "string_pool.h"

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

// What a code object's file says, found once per code object. The cache holds a reference to
// each code object, so an address is never a freed object's reused; it starts again when
// the skip prefixes change or it has seen kMaxCodes code objects. Under the GIL.
struct CodeFacts {
  bool user = false;
  bool input_pipeline = false;
  std::unordered_map<int, std::string_view> sites;  // line -> "file:line", pooled
};
constexpr size_t kMaxCodes = 1 << 14;
std::unordered_map<PyCodeObject*, CodeFacts>* code_facts =
    new std::unordered_map<PyCodeObject*, CodeFacts>();

void ForgetCodeFacts() {
  for (auto& entry : *code_facts) Py_DECREF(entry.first);
  code_facts->clear();
}

// `code`: a new reference, kept by the cache or released here.
CodeFacts& FactsOf(PyCodeObject* code) {
  auto found = code_facts->find(code);
  if (found != code_facts->end()) {
    Py_DECREF(code);
    return found->second;
  }
  if (code_facts->size() >= kMaxCodes) ForgetCodeFacts();
  CodeFacts facts;
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  if (file != nullptr) {
    facts.user = IsUserFile(file);
    facts.input_pipeline = IsInputPipelineFile(file);
  }
  return code_facts->emplace(code, std::move(facts)).first->second;
}

std::string_view SiteOf(PyCodeObject* code, CodeFacts& facts, int line) {
  auto found = facts.sites.find(line);
  if (found != facts.sites.end()) return found->second;
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  const std::string_view site =
      Pooled(file == nullptr ? std::string() : Shorten(file) + ":" + std::to_string(line));
  facts.sites.emplace(line, site);
  return site;
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
  if (Py_IsInitialized()) {  // what files are user code may change
    PyGILState_STATE gil = PyGILState_Ensure();
    ForgetCodeFacts();
    PyGILState_Release(gil);
  }
  std::lock_guard<std::mutex> lock(config_mu);
  skip_prefixes = std::move(prefixes);
  cwd_prefix = cwd.empty() ? "" : cwd + "/";
}

std::string CurrentCallSite() { return std::string(ReadPythonContext({}).call_site); }

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
      PyCodeObject* code = PyFrame_GetCode(frame);  // new reference, given to FactsOf
      CodeFacts& facts = FactsOf(code);
      if (facts.user) context.call_site = SiteOf(code, facts, PyFrame_GetLineNumber(frame));
      if (facts.input_pipeline) context.input_pipeline = true;
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
