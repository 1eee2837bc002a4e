// The model `upguard machines fit` writes and `detect --model` reads: per metric a denoiser
// (denoiser.h) and the order the detector tries metrics in. Format: docs/formats/machine-model.md.
//
//   ASSIGN_OR_RETURN(MachineModel model, ReadMachineModel("model.json"));
//   const Denoiser* cpu = model.Find("cpu_util");  // null: compare cpu_util raw
#pragma once

#include <map>
#include <string>
#include <vector>

#include "machines/denoiser.h"
#include "upguard/status.h"

namespace upguard::machines {

inline constexpr char kMachineModelFormat[] = "upguard.machines-model/1";

struct MachineModel {
  size_t window = 8;
  size_t hidden = 4;
  size_t latent = 8;
  double step = 1;
  std::map<std::string, Denoiser> metrics;
  std::vector<std::string> priority;
  std::string priority_source = "default";  // "labels" or "default"
  size_t fit_machines = 0;
  size_t fit_points = 0;
  double fit_seconds = 0;

  // The denoiser for `metric` ("net_rx_bytes.eth0" falls back on "net_rx_bytes"), or null.
  const Denoiser* Find(const std::string& metric) const;
};

StatusOr<MachineModel> ReadMachineModel(const std::string& path);
Status WriteMachineModel(const MachineModel& model, const std::string& path);

}  // namespace upguard::machines
