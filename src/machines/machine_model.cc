#include "machines/machine_model.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/file.h"

namespace upguard::machines {
namespace {

using nlohmann::json;

// A float as 9 significant digits (round-trips float32 exactly).
json FloatArray(const std::vector<float>& values) {
  json out = json::array();
  for (float v : values) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.9g", static_cast<double>(v));
    out.push_back(json::parse(text));
  }
  return out;
}

Status ReadFloats(const json& object, const char* key, const std::string& where,
                  std::vector<float>* out) {
  if (!object.contains(key) || !object[key].is_array()) {
    return InvalidArgument(where + ": \"" + key + "\" is missing or not an array");
  }
  for (const json& value : object[key]) {
    if (!value.is_number()) return InvalidArgument(where + ": \"" + key + "\" holds a non-number");
    out->push_back(value.get<float>());
  }
  return Status::Ok();
}

StatusOr<size_t> ReadSize(const json& object, const char* key, const std::string& where) {
  if (!object.contains(key) || !object[key].is_number_unsigned()) {
    return InvalidArgument(where + ": \"" + key + "\" must be a positive integer");
  }
  return object[key].get<size_t>();
}

StatusOr<Denoiser> ReadDenoiser(const json& entry, const MachineModel& model,
                                const std::string& where) {
  Denoiser d;
  d.hidden = model.hidden;
  d.latent = model.latent;
  if (!entry.is_object()) return InvalidArgument(where + ": not an object");
  const json& range = entry.value("range", json());
  if (!range.is_array() || range.size() != 2 || !range[0].is_number() || !range[1].is_number()) {
    return InvalidArgument(where + ": \"range\" must be [lo, hi]");
  }
  d.lo = range[0].get<double>();
  d.hi = range[1].get<double>();
  RETURN_IF_ERROR(ReadFloats(entry, "w_ih", where, &d.w_ih));
  RETURN_IF_ERROR(ReadFloats(entry, "w_hh", where, &d.w_hh));
  RETURN_IF_ERROR(ReadFloats(entry, "b", where, &d.b));
  RETURN_IF_ERROR(ReadFloats(entry, "w_mu", where, &d.w_mu));
  RETURN_IF_ERROR(ReadFloats(entry, "b_mu", where, &d.b_mu));
  const json& limit = entry.value("score_limit", json());
  if (!limit.is_number()) return InvalidArgument(where + ": \"score_limit\" must be a number");
  d.score_limit = limit.get<double>();
  d.windows = entry.value("windows", size_t{0});
  d.reconstruction_rmse = entry.value("reconstruction_rmse", 0.0);
  d.noise_rmse = entry.value("noise_rmse", 0.0);
  RETURN_IF_ERROR(d.Check(where));
  return d;
}

}  // namespace

const Denoiser* MachineModel::Find(const std::string& metric) const {
  auto found = metrics.find(metric);
  if (found == metrics.end()) {
    const size_t dot = metric.find('.');
    if (dot != std::string::npos) found = metrics.find(metric.substr(0, dot));
  }
  return found == metrics.end() ? nullptr : &found->second;
}

StatusOr<MachineModel> ReadMachineModel(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return NotFound(path + ": cannot open the model (write one with `upguard machines fit`)");
  std::stringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgument(path + ": not a JSON object (docs/formats/machine-model.md)");
  }
  if (doc.value("format", std::string()) != kMachineModelFormat) {
    return InvalidArgument(path + ": \"format\" is not \"" + std::string(kMachineModelFormat) +
                           "\" (docs/formats/machine-model.md)");
  }
  MachineModel model;
  ASSIGN_OR_RETURN(model.window, ReadSize(doc, "window", path));
  ASSIGN_OR_RETURN(model.hidden, ReadSize(doc, "hidden", path));
  ASSIGN_OR_RETURN(model.latent, ReadSize(doc, "latent", path));
  if (model.window < 2) return InvalidArgument(path + ": \"window\" must be at least 2");
  model.step = doc.value("step", 1.0);
  if (!doc.contains("metrics") || !doc["metrics"].is_object()) {
    return InvalidArgument(path + ": \"metrics\" is missing or not an object");
  }
  for (const auto& [name, entry] : doc["metrics"].items()) {
    ASSIGN_OR_RETURN(Denoiser d, ReadDenoiser(entry, model, path + ": metric \"" + name + "\""));
    model.metrics.emplace(name, std::move(d));
  }
  const json& priority = doc.value("priority", json::array());
  if (!priority.is_array()) return InvalidArgument(path + ": \"priority\" must be an array");
  for (const json& name : priority) {
    if (!name.is_string()) return InvalidArgument(path + ": \"priority\" holds a non-string");
    model.priority.push_back(name.get<std::string>());
  }
  model.priority_source = doc.value("priority_source", std::string("default"));
  const json& fit = doc.value("fit", json::object());
  if (fit.is_object()) {
    model.fit_machines = fit.value("machines", size_t{0});
    model.fit_points = fit.value("points", size_t{0});
    model.fit_seconds = fit.value("seconds", 0.0);
  }
  return model;
}

Status WriteMachineModel(const MachineModel& model, const std::string& path) {
  json doc;
  doc["format"] = kMachineModelFormat;
  doc["window"] = model.window;
  doc["hidden"] = model.hidden;
  doc["latent"] = model.latent;
  doc["step"] = model.step;
  json metrics = json::object();
  for (const auto& [name, d] : model.metrics) {
    json entry;
    entry["range"] = {d.lo, d.hi};
    entry["score_limit"] = d.score_limit;
    entry["windows"] = d.windows;
    entry["reconstruction_rmse"] = d.reconstruction_rmse;
    entry["noise_rmse"] = d.noise_rmse;
    entry["w_ih"] = FloatArray(d.w_ih);
    entry["w_hh"] = FloatArray(d.w_hh);
    entry["b"] = FloatArray(d.b);
    entry["w_mu"] = FloatArray(d.w_mu);
    entry["b_mu"] = FloatArray(d.b_mu);
    metrics[name] = std::move(entry);
  }
  doc["metrics"] = std::move(metrics);
  doc["priority"] = model.priority;
  doc["priority_source"] = model.priority_source;
  doc["fit"] = {{"machines", model.fit_machines},
                {"points", model.fit_points},
                {"seconds", model.fit_seconds}};
  const Status written = WriteFileAtomically(path, doc.dump(1) + "\n");
  if (!written.ok()) {
    return IoError("cannot write the model: " + written.message() + " (is the directory there?)");
  }
  return Status::Ok();
}

}  // namespace upguard::machines
