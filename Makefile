# Thin wrapper over CMake presets and pytest. `make demo` and `make test` work on a fresh
# Debian 12 machine: they install what is missing first.
PYTHON ?= /usr/bin/python3
JOBS ?= $(shell nproc)
RELEASE := build/release
DEBUG := build/debug

# One build directory per interpreter's torch, so that builds for several coexist and
# `upguard record` finds the one that fits the command's python (docs/cli.md, "Which adapter"):
# build/release (the preset) for Debian's /usr/bin/python3; build/torch-<torch>-<cp311> for
# `make build PYTHON=/path/to/python`, with the CLI and the adapter only.
ifeq ($(PYTHON),/usr/bin/python3)
BUILD_DIR := $(RELEASE)
else
PYTHON_FACTS := $(shell $(PYTHON) cmake/interpreter_facts.py --make)
ifeq ($(PYTHON_FACTS),)
$(error PYTHON=$(PYTHON) cannot be run or has no torch; name the interpreter that runs the training)
endif
BUILD_DIR := $(word 1,$(PYTHON_FACTS))
PYTHON_ABS := $(word 2,$(PYTHON_FACTS))
endif

.PHONY: all deps build build-debug demo test test-all test-unit test-e2e test-debug bench clean \
	venv-torch2 build-torch2 test-e2e-torch2 test-adapter-select test-pip-torch2

all: build

deps:
	@scripts/install-deps.sh

build: deps
ifeq ($(BUILD_DIR),$(RELEASE))
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)
else
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release -DUPGUARD_PYTHON=$(PYTHON_ABS) >/dev/null
	cmake --build $(BUILD_DIR) -j $(JOBS) --target upguard upguard_python
	@echo "built $(BUILD_DIR) for $(PYTHON_ABS): $(BUILD_DIR)/upguard record -o runs/a -- $(PYTHON) train.py"
endif

build-debug: deps
	cmake --preset debug >/dev/null
	cmake --build --preset debug -j $(JOBS)

demo: build
	$(RELEASE)/upguard demo; test $$? -le 1

test-unit: build
	ctest --preset release -j $(JOBS)

test-e2e: build
	UPGUARD_BUILD=$(CURDIR)/$(RELEASE) $(PYTHON) -m pytest -q --durations=15 tests/e2e

# The core and the CLI again under AddressSanitizer + UndefinedBehaviorSanitizer.
test-debug: build-debug
	ctest --preset debug -j $(JOBS)

# Both torches: Debian's 1.13 (the default build) and PyPI's 2.x (a project venv, downloaded
# once), whose e2e suite (less the one_torch tests), adapter selection and `pip install .` run
# last. `make test-all`: the same with every e2e test on both torches.
test: test-unit test-e2e test-debug test-e2e-torch2 test-pip-torch2

test-all:
	$(MAKE) test TORCH2_SELECT=

# torch 2.x from PyPI beside Debian's 1.13 (issue 13):
# a project venv with pinned versions, installed once (PyPI's Linux wheel is a CUDA build of
# several GB that runs on the CPU), and a build of the adapter against its torch.
TORCH2_VENV := .venv-torch2
TORCH2_PINS := torch==2.15.0 torchvision==0.29.2 pybind11==2.13.6 numpy==2.4.6 pytest==9.2.0 transformers==5.25.0 lightning==2.6.6
TORCH2_PYTHON := $(CURDIR)/$(TORCH2_VENV)/bin/python
TORCH2_BUILD = $(word 1,$(shell $(TORCH2_PYTHON) cmake/interpreter_facts.py --make))

# Reinstalls (pip keeps what already satisfies a pin) when the pins above change.
$(TORCH2_VENV)/.installed: Makefile
	/usr/bin/python3 -m venv $(TORCH2_VENV)
	$(TORCH2_VENV)/bin/pip install --quiet $(TORCH2_PINS)
	touch $@

venv-torch2: $(TORCH2_VENV)/.installed

# build/torch-2.15.0-cp311
build-torch2: venv-torch2
	$(MAKE) build PYTHON=$(TORCH2_PYTHON)

# Tests marked one_torch (tests/e2e/conftest.py: the machines detector, the watch monitor
# against injected faults, a matrix's later cases) run on torch 1.13 only, unless
# `make test-all` (or TORCH2_SELECT=) asks for every test on both torches.
TORCH2_SELECT ?= -m "not one_torch"
test-e2e-torch2: build-torch2
	UPGUARD_BUILD=$(CURDIR)/$(TORCH2_BUILD) UPGUARD_TEST_PYTHON=$(TORCH2_PYTHON) \
	  $(TORCH2_PYTHON) -m pytest -q --durations=15 $(TORCH2_SELECT) tests/e2e

# `upguard record` loads the adapter built for the command's torch, or stops with exit code 2
# before the command runs (tests/e2e/test_adapter_select.py; the torch 2.x cases skip without
# the venv, the positive one without build-torch2).
test-adapter-select: build
	UPGUARD_BUILD=$(CURDIR)/$(RELEASE) UPGUARD_TORCH2_PYTHON=$(TORCH2_PYTHON) \
	  $(PYTHON) -m pytest -q tests/e2e/test_adapter_select.py

# `pip install --no-build-isolation .` into a throwaway venv that sees the torch 2.x venv's
# packages (a .pth file: torch is not installed again), then a recording with the installed
# `upguard` command (tests/pip/test_pip_install.py). The build directory build/pip-<wheel tag>
# is kept, so a rerun only relinks.
PIP_VENV := build/pip-venv-torch2
SKBUILD_PIN := scikit-build-core==1.1.2
test-pip-torch2: deps venv-torch2
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) UPGUARD_PIP_VENV=$(CURDIR)/$(PIP_VENV) \
	  UPGUARD_TORCH2_PYTHON=$(TORCH2_PYTHON) UPGUARD_SKBUILD_PIN=$(SKBUILD_PIN) \
	  $(TORCH2_PYTHON) -m pytest -q tests/pip

# Benchmarks with side-by-side ratios; writes BENCHMARKS.md.
bench: build
	$(PYTHON) bench/run_all.py --build $(RELEASE)

clean:
	rm -rf build
