# Thin wrapper over CMake presets and pytest. `make demo` and `make test` work on a fresh
# Debian 12 machine: they install what is missing first.
PYTHON ?= /usr/bin/python3
JOBS ?= $(shell nproc)
RELEASE := build/release
DEBUG := build/debug

.PHONY: all deps build build-debug demo test test-unit test-e2e test-debug bench clean \
	venv-torch2 build-torch2 test-e2e-torch2

all: build

deps:
	@scripts/install-deps.sh

build: deps
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)

build-debug: deps
	cmake --preset debug >/dev/null
	cmake --build --preset debug -j $(JOBS)

demo: build
	$(RELEASE)/upguard demo; test $$? -le 1

test-unit: build
	ctest --preset release -j $(JOBS)

test-e2e: build
	UPGUARD_BUILD=$(CURDIR)/$(RELEASE) $(PYTHON) -m pytest -q tests/e2e

# The core and the CLI again under AddressSanitizer + UndefinedBehaviorSanitizer.
test-debug: build-debug
	ctest --preset debug -j $(JOBS)

test: test-unit test-e2e test-debug

# torch 2.x from PyPI beside Debian's 1.13 (issue 13, in progress; not yet part of `make test`):
# a project venv with pinned versions, installed once (PyPI's Linux wheel is a CUDA build of
# several GB that runs on the CPU), and a build of the adapter against its torch.
TORCH2_VENV := .venv-torch2
TORCH2_PINS := torch==2.15.0 torchvision==0.29.2 pybind11==2.13.6 numpy==2.4.6 pytest==9.2.0
TORCH2_BUILD := build/torch2

# Reinstalls (pip keeps what already satisfies a pin) when the pins above change.
$(TORCH2_VENV)/.installed: Makefile
	/usr/bin/python3 -m venv $(TORCH2_VENV)
	$(TORCH2_VENV)/bin/pip install --quiet $(TORCH2_PINS)
	touch $@

venv-torch2: $(TORCH2_VENV)/.installed

build-torch2: deps venv-torch2
	cmake -S . -B $(TORCH2_BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DUPGUARD_PYTHON=$(CURDIR)/$(TORCH2_VENV)/bin/python >/dev/null
	cmake --build $(TORCH2_BUILD) -j $(JOBS) --target upguard upguard_python

test-e2e-torch2: build-torch2
	UPGUARD_BUILD=$(CURDIR)/$(TORCH2_BUILD) UPGUARD_TEST_PYTHON=$(CURDIR)/$(TORCH2_VENV)/bin/python \
	  $(TORCH2_VENV)/bin/python -m pytest -q tests/e2e

# Benchmarks with side-by-side ratios; writes BENCHMARKS.md.
bench: build
	$(PYTHON) bench/run_all.py --build $(RELEASE)

clean:
	rm -rf build
