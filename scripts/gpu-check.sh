#!/usr/bin/env bash
# The CUDA digest's checks on a machine with a GPU (issue 19): the vectors and DigestTensor on
# the device (upguard_cuda_tests), then throughput against a device-to-device copy and the host
# cost of an Enqueue (upguard_cuda_digest_bench). Uses the binaries of BUILD (default
# build/release, built where nvcc is found: `make build`); prints what it ran and exits non-zero
# on the first failure.
#
#   scripts/gpu-check.sh [BUILD]
set -euo pipefail
build="${1:-build/release}"
tests="$build/src/digest/upguard_cuda_tests"
bench="$build/src/digest/upguard_cuda_digest_bench"
for binary in "$tests" "$bench"; do
  if [[ ! -x "$binary" ]]; then
    echo "gpu-check: $binary is missing; build it where nvcc is found (make build)" >&2
    exit 2
  fi
done
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "== $tests"
UPGUARD_REQUIRE_GPU=1 "$tests" --gtest_brief=1
echo "== $bench"
"$bench"
