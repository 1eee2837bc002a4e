// `upguard machines fit`: a MachineModel (docs/formats/machine-model.md) from healthy history:
// per metric the healthy range and an LSTM-VAE denoiser trained on the healthy windows
// (lstm_vae.h), and, when labels name faulty machines, the metric priority a decision tree
// learns (fit_data.h). Labelled points are left out of the denoisers' training.
//
//   FitOptions options;
//   ASSIGN_OR_RETURN(MachineModel model, FitMachineModel(grid, labels, options, &log));
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "machines/fault_labels.h"
#include "machines/grid.h"
#include "machines/machine_model.h"
#include "machines_fit/lstm_vae.h"
#include "upguard/status.h"

namespace upguard::machines {

struct FitOptions {
  size_t window = 8;
  size_t max_windows = 20000;  // per metric, evenly thinned beyond
  TrainOptions train;
};

// `log` (may be null) gets one line per metric: windows, reconstruction error, seconds.
StatusOr<MachineModel> FitMachineModel(const Grid& grid, const std::vector<FaultLabel>& labels,
                                       const FitOptions& options, std::string* log);

}  // namespace upguard::machines
