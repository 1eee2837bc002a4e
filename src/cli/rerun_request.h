// The re-run of a recorded command, from its run metadata (meta.json): argv (the launcher's,
// torchrun's, for several ranks), working directory,
// the numerics-relevant environment and the recording options that decide which ops get an
// index (max depth, op filters, stats). `diff --explain` adds a capture, `diff --zoom` a step
// window and a resume point.
//
// The command runs only with consent (cli/rerun_consent.h), and of meta.json's env only the
// names the recorder writes are set (kNumericsEnv): a loader or path variable there
// (LD_PRELOAD, PYTHONPATH, PATH) would decide what code the re-run executes.
#pragma once

#include <string>
#include <string_view>

#include "cli/record_runner.h"
#include "cli/rerun_consent.h"
#include "run/run_loader.h"
#include "upguard/status.h"

namespace upguard {

// The environment variables the recorder writes into meta.json's env when they are set
// (NUMERICS_ENV in python/upguard/_meta.py: keep the two lists the same; tests/e2e/
// test_rerun_consent.py checks that every one of them reaches a re-run).
inline constexpr std::string_view kNumericsEnv[] = {
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "OPENBLAS_CORETYPE",
    "MKL_CBWR",
    "CUBLAS_WORKSPACE_CONFIG",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NVIDIA_TF32_OVERRIDE",
    "PYTHONHASHSEED",
    "TORCH_DETERMINISTIC",
    "ATEN_CPU_CAPABILITY",
};

// `side` ("A", "B") and `purpose` ("to capture tensors") name the run in errors and in the
// question `consent` asks. The request writes into `out_dir`, quiet; steps, capture and the
// rest are the caller's. Fails with StatusCode::kUntrusted when `consent` refuses.
StatusOr<RecordRequest> RerunRequest(const Run& run, const char* side, const char* purpose,
                                     const std::string& out_dir, RerunConsent& consent);

}  // namespace upguard
