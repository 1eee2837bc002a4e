"""What upguard needs to know of a Python interpreter, one `key value` line each.

Three readers, one script, so both read a torch version the same way:
- CMake, configuring the adapter (`--build`): it also imports torch and pybind11 for their
  CMake directories and torch's C++ ABI flag; the answers go into upguard/_build_info.json.
- `upguard record` (src/cli/interpreter_probe.cc embeds this file): before running a command
  it asks that command's interpreter which torch it has, without importing torch.
- the Makefile (`--make`): `make build PYTHON=...` names the build directory after that torch.

The torch version is the version of the distribution installed beside the torch package that
`import torch` would load (its dist-info or egg-info), read with importlib.metadata in about
0.1 s; only a torch without such metadata is imported (`torch` instead of `torch-dist`).
"""

import importlib.util
import os
import sys
import sysconfig


def torch_dist_version():
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    site = os.path.dirname(list(spec.submodule_search_locations)[0])
    try:
        import importlib.metadata as metadata

        for dist in metadata.distributions(name="torch", path=[site]):
            return dist.version
    except Exception:
        return None
    return None


def make_facts():
    """For the Makefile: the build directory of this interpreter's torch, and the interpreter's
    absolute path (a venv's own, not the base interpreter it links to)."""
    if importlib.util.find_spec("torch") is None:
        sys.exit(f"{sys.executable} has no torch: name the interpreter that runs the training")
    dist = torch_dist_version()
    if dist is None:  # a torch without metadata (built from source in place)
        import torch

        dist = torch.__version__
    tag = {"cpython": "cp"}.get(sys.implementation.name, sys.implementation.name)
    tag += f"{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"
    print(f"build/torch-{dist.replace('+', '-')}-{tag}", os.path.abspath(sys.executable))


def main():
    if "--make" in sys.argv:
        make_facts()
        return
    build = "--build" in sys.argv
    print("soabi", sysconfig.get_config_var("SOABI") or "")
    dist = torch_dist_version()
    if dist is not None:
        print("torch-dist", dist)
    if build or (dist is None and importlib.util.find_spec("torch") is not None):
        import torch

        print("torch", torch.__version__)
    if build:
        import torch.utils

        print("torch-cmake-prefix", torch.utils.cmake_prefix_path)
        print("cxx11-abi", int(bool(torch._C._GLIBCXX_USE_CXX11_ABI)))
        try:
            import pybind11

            print("pybind11-cmake-dir", pybind11.get_cmake_dir())
        except ImportError:
            pass
        scripts = sysconfig.get_path("scripts")
        print("platlib-from-scripts", os.path.relpath(sysconfig.get_path("platlib"), scripts))
        return
    spec = importlib.util.find_spec("upguard")
    if spec is not None and spec.submodule_search_locations:
        print("upguard-dir", os.path.dirname(list(spec.submodule_search_locations)[0]))


main()
