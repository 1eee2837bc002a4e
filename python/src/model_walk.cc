#include "model_walk.h"

#include <pybind11/pybind11.h>

#include <deque>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace upguard::torch_adapter {
namespace {

// One module of the plan as it was planned: what ShapeHolds() compares.
struct PlannedModule {
  py::object module;  // a weak reference
  Py_ssize_t parameters = 0;
  Py_ssize_t buffers = 0;
  std::vector<py::object> children;  // weak references, or None where the child is None
};

struct PlannedTensor {
  std::string name;
  std::string grad_name;  // name + ".grad"
  size_t module = 0;      // index into Plan::modules
  py::object attr;        // the key in the module's _parameters or _buffers
  TensorRole role = TensorRole::kParameter;
};

// The names the walk makes for an optimizer's tensors, kept from one step to the next and
// made again only when what they are made of changed (a step's end makes about a hundred).
struct StateName {
  py::object key;          // the state's key: an exact str (immutable), held; else never matched
  std::string param_name;  // the name of the parameter it was made for
  std::string name;        // "<key> of <param_name>"
};

struct ParamNames {
  std::string outside;       // "<label>.param_groups[g][p]", where outside the modules
  std::string outside_grad;  // outside + ".grad"
  std::deque<StateName> state;
};

struct PlannedOptimizer {
  py::object optimizer;  // a weak reference
  std::string label;     // "AdamW", "SGD#1"
  // Per group, per parameter; deques: the walk holds views of their names while it grows them.
  std::deque<std::deque<ParamNames>> names;
};

struct Plan {
  py::object registry;  // upguard._state.REGISTRY
  py::object tensor_type;
  py::object parameter_type;
  long long generation = -1;
  std::vector<py::object> roots;  // weak references
  std::vector<PlannedModule> modules;
  std::vector<PlannedTensor> tensors;
  std::vector<PlannedOptimizer> optimizers;
};

// The object a weak reference points to (borrowed), or nullptr when it is gone.
PyObject* Target(const py::object& weak) {
  if (weak.is_none()) return Py_None;
  PyObject* target = PyWeakref_GetObject(weak.ptr());
  return target == Py_None ? nullptr : target;
}

// The attribute names the walk reads, made and interned once (PyObject_GetAttrString would
// make its name every call), on first use with the GIL held; never released.
struct Names {
  PyObject* parameters = PyUnicode_InternFromString("_parameters");
  PyObject* buffers = PyUnicode_InternFromString("_buffers");
  PyObject* modules = PyUnicode_InternFromString("_modules");
  PyObject* grad = PyUnicode_InternFromString("grad");
  PyObject* cdata = PyUnicode_InternFromString("_cdata");
  PyObject* state = PyUnicode_InternFromString("state");
  PyObject* param_groups = PyUnicode_InternFromString("param_groups");
};

const Names& Attrs() {
  static const Names* names = new Names();
  return *names;
}

py::object Attr(PyObject* obj, PyObject* name) {
  PyObject* value = PyObject_GetAttr(obj, name);
  if (value == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(value);
}

// A module's own attribute (_parameters, _buffers, _modules): looked up as object.__getattribute__
// does, without the detour through nn.Module's Python __getattr__ hook that PyObject_GetAttr
// takes for every lookup on a type defining one; that hook's way, where this finds nothing.
py::object ModuleAttr(PyObject* module, PyObject* name) {
  if (PyObject* value = PyObject_GenericGetAttr(module, name)) {
    return py::reinterpret_steal<py::object>(value);
  }
  if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
  PyErr_Clear();
  return Attr(module, name);
}

// Calls fn(key, value) (borrowed) for every item of a mapping, in its iteration order.
template <typename Fn>
void ForEachItem(const py::handle& mapping, Fn&& fn) {
  if (PyDict_CheckExact(mapping.ptr())) {
    Py_ssize_t pos = 0;
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    while (PyDict_Next(mapping.ptr(), &pos, &key, &value)) fn(key, value);
    return;
  }
  // An OrderedDict (torch 1.13's module dicts), a defaultdict (an optimizer's state): in the
  // order its iterator gives the keys, each key's value from the dict's table (items() made a
  // tuple and two pybind handles per item: a sixth of a step end's walk, perf says).
  if (PyDict_Check(mapping.ptr())) {
    PyObject* keys = PyObject_GetIter(mapping.ptr());
    if (keys == nullptr) throw py::error_already_set();
    auto held_keys = py::reinterpret_steal<py::object>(keys);
    while (PyObject* key = PyIter_Next(keys)) {
      auto held_key = py::reinterpret_steal<py::object>(key);
      PyObject* value = PyDict_GetItemWithError(mapping.ptr(), key);  // borrowed
      if (value == nullptr) {
        if (PyErr_Occurred()) throw py::error_already_set();
        continue;  // a key its iterator gives and its table lacks: not an item
      }
      auto held_value = py::reinterpret_borrow<py::object>(value);  // as items() held it
      fn(key, value);
    }
    if (PyErr_Occurred()) throw py::error_already_set();
    return;
  }
  // Any other mapping: its own items.
  for (py::handle item : mapping.attr("items")()) {
    auto pair = py::reinterpret_borrow<py::tuple>(item);
    fn(pair[0].ptr(), pair[1].ptr());
  }
}

// mapping.get(key), borrowed (`walk` holds what a mapping that is not a dict made), or nullptr.
template <typename Holder>
PyObject* Get(const py::object& mapping, const py::object& key, Holder& holder) {
  if (PyDict_Check(mapping.ptr())) {
    PyObject* value = PyDict_GetItemWithError(mapping.ptr(), key.ptr());
    if (value == nullptr && PyErr_Occurred()) throw py::error_already_set();
    return value;
  }
  py::object value = mapping.attr("get")(key);
  PyObject* borrowed = value.ptr();
  holder.Hold(std::move(value));
  return borrowed;
}

Plan& TheLoadedPlan() {
  static auto* plan = new Plan();  // guarded by the GIL; never released (interpreter objects)
  if (!plan->registry) {
    py::module_ state = py::module_::import("upguard._state");
    plan->registry = state.attr("REGISTRY");
    py::module_ torch = py::module_::import("torch");
    plan->tensor_type = torch.attr("Tensor");
    plan->parameter_type = torch.attr("nn").attr("Parameter");
  }
  return *plan;
}

void Load(Plan& plan, long long generation) {
  py::tuple planned = plan.registry.attr("plan")();
  plan.roots.clear();
  plan.modules.clear();
  plan.tensors.clear();
  plan.optimizers.clear();
  for (py::handle root : planned[0]) plan.roots.push_back(py::reinterpret_borrow<py::object>(root));
  for (py::handle item : planned[1]) {
    auto entry = py::reinterpret_borrow<py::tuple>(item);
    PlannedModule module;
    module.module = entry[0];
    module.parameters = entry[1].cast<Py_ssize_t>();
    module.buffers = entry[2].cast<Py_ssize_t>();
    for (py::handle child : entry[3]) {
      module.children.push_back(py::reinterpret_borrow<py::object>(child));
    }
    plan.modules.push_back(std::move(module));
  }
  for (py::handle item : planned[2]) {
    auto entry = py::reinterpret_borrow<py::tuple>(item);
    PlannedTensor tensor;
    tensor.name = entry[0].cast<std::string>();
    tensor.grad_name = tensor.name + ".grad";
    tensor.module = entry[1].cast<size_t>();
    tensor.attr = entry[2];
    tensor.role = static_cast<TensorRole>(entry[3].cast<int>());
    if (tensor.module >= plan.modules.size()) throw std::runtime_error("plan: no such module");
    plan.tensors.push_back(std::move(tensor));
  }
  for (py::handle item : planned[3]) {
    auto entry = py::reinterpret_borrow<py::tuple>(item);
    plan.optimizers.push_back(PlannedOptimizer{entry[0], entry[1].cast<std::string>(), {}});
  }
  plan.generation = generation;
}

// Whether the plan still describes the model; fills the modules' parameter and buffer dicts
// of this step.
bool ShapeHolds(const Plan& plan, std::vector<std::pair<py::object, py::object>>* dicts) {
  for (const py::object& root : plan.roots) {
    if (Target(root) == nullptr) return false;
  }
  dicts->clear();
  for (const PlannedModule& planned : plan.modules) {
    PyObject* module = Target(planned.module);
    if (module == nullptr) return false;
    py::object parameters = ModuleAttr(module, Attrs().parameters);
    py::object buffers = ModuleAttr(module, Attrs().buffers);
    if (py::len(parameters) != static_cast<size_t>(planned.parameters) ||
        py::len(buffers) != static_cast<size_t>(planned.buffers)) {
      return false;
    }
    size_t idx = 0;
    bool same = true;
    ForEachItem(ModuleAttr(module, Attrs().modules), [&](PyObject*, PyObject* child) {
      same = same && idx < planned.children.size() && Target(planned.children[idx]) == child;
      ++idx;
    });
    if (!same || idx != planned.children.size()) return false;
    dicts->emplace_back(std::move(parameters), std::move(buffers));
  }
  return true;
}

PyTypeObject* Type(const py::object& type) { return reinterpret_cast<PyTypeObject*>(type.ptr()); }

// One walk: what it handed on, by tensor object (named() takes each tensor once).
class Walk {
 public:
  Walk(const Plan& plan, const ModelTensorSink& sink) : plan_(plan), sink_(sink) {
    names_.reserve(2 * plan.tensors.size());
  }

  void Add(std::string_view name, TensorRole role, PyObject* tensor) {
    const bool plain =
        Py_TYPE(tensor) == Type(plan_.tensor_type) || Py_TYPE(tensor) == Type(plan_.parameter_type);
    const int is_tensor = plain ? 1 : PyObject_IsInstance(tensor, plan_.tensor_type.ptr());
    if (is_tensor < 0) throw py::error_already_set();
    if (is_tensor == 0 || !names_.emplace(tensor, name).second) return;
    PyObject* read = tensor;
    py::object local;
    // A DTensor (FSDP2, tensor parallel) holds this rank's shard: that is the rank's model
    // state, and what its ops read and write. A plain tensor or parameter is not one.
    if (!plain) {
      local = py::getattr(tensor, "_local_tensor", py::none());
      const int is_local = PyObject_IsInstance(local.ptr(), plan_.tensor_type.ptr());
      if (is_local < 0) throw py::error_already_set();
      if (is_local == 1) read = local.ptr();
    }
    const auto impl = Attr(read, Attrs().cdata).cast<uintptr_t>();
    sink_(ModelTensorRef{name, role, impl});
  }

  // Adds a parameter and its gradient.
  void AddParameter(std::string_view name, std::string_view grad_name, PyObject* param) {
    Add(name, TensorRole::kParameter, param);
    py::object grad = Attr(param, Attrs().grad);
    if (!grad.is_none()) {
      Add(grad_name, TensorRole::kGradient, grad.ptr());
      held_.push_back(std::move(grad));  // names_ holds its address until the walk ends
    }
  }

  bool Seen(PyObject* tensor) const { return names_.count(tensor) != 0; }

  std::string_view NameOf(PyObject* tensor) const {
    auto found = names_.find(tensor);
    return found == names_.end() ? std::string_view() : found->second;
  }

  void Hold(py::object obj) { held_.push_back(std::move(obj)); }

 private:
  const Plan& plan_;
  const ModelTensorSink& sink_;
  std::unordered_map<PyObject*, std::string_view> names_;
  std::vector<py::object> held_;
};

// The name of a parameter's state under `key`: made again unless `slot` (the state at this
// position the step before) was made of the same key and parameter name.
std::string_view StateNameOf(StateName& slot, PyObject* key, std::string_view param_name) {
  if (slot.key.ptr() == key && slot.param_name == param_name) return slot.name;
  slot.key = PyUnicode_CheckExact(key) ? py::reinterpret_borrow<py::object>(key) : py::object();
  slot.param_name = std::string(param_name);
  slot.name = py::str(key).cast<std::string>() + " of " + slot.param_name;
  return slot.name;
}

void WalkOptimizer(PlannedOptimizer& planned, PyObject* optimizer, Walk& walk) {
  py::object state = Attr(optimizer, Attrs().state);
  std::unordered_map<PyObject*, PyObject*> states;  // parameter -> its state (borrowed)
  if (PyDict_Check(state.ptr())) {  // a defaultdict: its table's items (their order is not used)
    states.reserve(static_cast<size_t>(PyDict_Size(state.ptr())));
    Py_ssize_t pos = 0;
    PyObject* param = nullptr;
    PyObject* value = nullptr;
    while (PyDict_Next(state.ptr(), &pos, &param, &value)) states.emplace(param, value);
  } else {
    ForEachItem(state, [&](PyObject* param, PyObject* value) { states.emplace(param, value); });
  }
  size_t group_idx = 0;
  for (py::handle group : Attr(optimizer, Attrs().param_groups)) {
    if (planned.names.size() <= group_idx) planned.names.resize(group_idx + 1);
    std::deque<ParamNames>& group_names = planned.names[group_idx];
    size_t param_idx = 0;
    py::object params = group["params"];
    for (py::handle param : params) {
      if (group_names.size() <= param_idx) group_names.resize(param_idx + 1);
      ParamNames& names = group_names[param_idx];
      std::string_view param_name = walk.NameOf(param.ptr());
      if (param_name.empty()) {  // a parameter outside the recorded modules
        if (names.outside.empty()) {
          names.outside = planned.label + ".param_groups[" + std::to_string(group_idx) + "][" +
                          std::to_string(param_idx) + "]";
          names.outside_grad = names.outside + ".grad";
        }
        param_name = names.outside;
        walk.AddParameter(param_name, names.outside_grad, param.ptr());
      }
      auto found = states.find(param.ptr());
      size_t state_idx = 0;
      if (found != states.end()) {
        auto param_state = py::reinterpret_borrow<py::object>(found->second);
        ForEachItem(param_state, [&](PyObject* key, PyObject* value) {
          if (names.state.size() <= state_idx) names.state.resize(state_idx + 1);
          walk.Add(StateNameOf(names.state[state_idx++], key, param_name),
                   TensorRole::kOptimizerState, value);
        });
      }
      names.state.resize(state_idx);
      ++param_idx;
    }
    group_names.resize(param_idx);
    ++group_idx;
  }
  planned.names.resize(group_idx);
  walk.Hold(std::move(state));
}

}  // namespace

void WalkModelTensors(const ModelTensorSink& sink) {
  Plan& plan = TheLoadedPlan();
  const auto generation = plan.registry.attr("generation").cast<long long>();
  std::vector<std::pair<py::object, py::object>> dicts;  // per module: _parameters, _buffers
  if (generation != plan.generation || !ShapeHolds(plan, &dicts)) {
    Load(plan, generation);
    if (!ShapeHolds(plan, &dicts)) throw std::runtime_error("the module tree changed mid-walk");
  }
  Walk walk(plan, sink);
  for (const PlannedTensor& planned : plan.tensors) {
    const auto& [parameters, buffers] = dicts[planned.module];
    const bool parameter = planned.role == TensorRole::kParameter;
    PyObject* tensor = Get(parameter ? parameters : buffers, planned.attr, walk);
    if (tensor == nullptr || tensor == Py_None || (parameter && walk.Seen(tensor))) {
      continue;  // unset, or shared with an earlier module
    }
    if (parameter) {
      walk.AddParameter(planned.name, planned.grad_name, tensor);
    } else {
      walk.Add(planned.name, planned.role, tensor);
    }
  }
  for (PlannedOptimizer& planned : plan.optimizers) {
    if (PyObject* optimizer = Target(planned.optimizer)) WalkOptimizer(planned, optimizer, walk);
  }
}

}  // namespace upguard::torch_adapter
