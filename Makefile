# Thin wrapper over CMake presets and pytest. `make demo` and `make test` work on a fresh
# Debian 12 machine: they install what is missing first.
PYTHON ?= /usr/bin/python3
JOBS ?= $(shell nproc)
RELEASE := build/release
DEBUG := build/debug

.PHONY: all deps build build-debug demo test test-unit test-e2e test-debug bench clean

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

# Benchmarks with side-by-side ratios; writes BENCHMARKS.md.
bench: build
	$(PYTHON) bench/run_all.py --build $(RELEASE)

clean:
	rm -rf build
