# The torch the adapter is built for: the one of the interpreter UPGUARD_PYTHON, the
# interpreter that runs the training (docs/architecture.md, "One adapter per torch").
#
# Sets UPGUARD_TORCH_VERSION (torch.__version__), UPGUARD_TORCH_DIST_VERSION (its installed
# distribution's version, what `upguard record` reads without importing torch),
# UPGUARD_PYTHON_SOABI, UPGUARD_TORCH_CXX11_ABI, UPGUARD_PLATLIB_FROM_SCRIPTS, and points
# Torch_DIR / Caffe2_DIR / pybind11_DIR at that interpreter's packages, every configure: a build
# directory reconfigured for another interpreter never keeps the previous one's torch.

# Runs cmake/interpreter_facts.py --build with `python_flags`; sets `out` to its output and
# `ok` to whether it ran.
function(upguard_run_interpreter_facts python_flags out ok)
  execute_process(
    COMMAND ${UPGUARD_PYTHON} ${python_flags} ${PROJECT_SOURCE_DIR}/cmake/interpreter_facts.py --build
    OUTPUT_VARIABLE facts ERROR_VARIABLE error RESULT_VARIABLE result)
  set(${out} "${facts}" PARENT_SCOPE)
  if(result EQUAL 0)
    set(${ok} TRUE PARENT_SCOPE)
  else()
    set(${ok} FALSE PARENT_SCOPE)
    set(upguard_facts_error "${error}" PARENT_SCOPE)
  endif()
endfunction()

# Sets `out` to the value of the `key value` line `key` of `facts` ("" when absent).
function(upguard_fact facts key out)
  if("${facts}" MATCHES "(^|\n)${key} ([^\n]*)")
    set(${out} "${CMAKE_MATCH_2}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

# pip's build isolation (`pip install .` without --no-build-isolation) hides the venv's
# site-packages from the build through PYTHONPATH; `-E` sees the packages the interpreter sees
# when it runs the training. Tried second, so a torch found through PYTHONPATH still wins.
upguard_run_interpreter_facts("" upguard_facts upguard_facts_ok)
if(NOT upguard_facts_ok)
  upguard_run_interpreter_facts("-E" upguard_facts upguard_facts_ok)
endif()
if(NOT upguard_facts_ok)
  message(FATAL_ERROR "${UPGUARD_PYTHON} cannot import torch: the adapter is built for the "
                      "torch of the interpreter that runs the training; name it with "
                      "`make build PYTHON=/path/to/python` (CMake: -DUPGUARD_PYTHON=...), or "
                      "install torch into it first.\n${upguard_facts_error}")
endif()
upguard_fact("${upguard_facts}" "torch" UPGUARD_TORCH_VERSION)
upguard_fact("${upguard_facts}" "torch-dist" UPGUARD_TORCH_DIST_VERSION)
upguard_fact("${upguard_facts}" "soabi" UPGUARD_PYTHON_SOABI)
upguard_fact("${upguard_facts}" "cxx11-abi" UPGUARD_TORCH_CXX11_ABI)
upguard_fact("${upguard_facts}" "platlib-from-scripts" UPGUARD_PLATLIB_FROM_SCRIPTS)
upguard_fact("${upguard_facts}" "torch-cmake-prefix" upguard_torch_prefix)
upguard_fact("${upguard_facts}" "pybind11-cmake-dir" upguard_pybind11_dir)

set(Torch_DIR "${upguard_torch_prefix}/Torch" CACHE PATH "torch's CMake package (from UPGUARD_PYTHON)" FORCE)
set(Caffe2_DIR "${upguard_torch_prefix}/Caffe2" CACHE PATH "torch's Caffe2 CMake package (from UPGUARD_PYTHON)" FORCE)
if(NOT upguard_pybind11_dir)  # isolated pip build of a venv without pybind11: the build's own
  execute_process(COMMAND ${UPGUARD_PYTHON} -c "import pybind11; print(pybind11.get_cmake_dir())"
    OUTPUT_VARIABLE upguard_pybind11_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(upguard_pybind11_dir)
  set(pybind11_DIR "${upguard_pybind11_dir}" CACHE PATH "pybind11's CMake package (from UPGUARD_PYTHON)" FORCE)
endif()
message(STATUS "upguard adapter: torch ${UPGUARD_TORCH_VERSION} (${UPGUARD_PYTHON_SOABI}, "
               "_GLIBCXX_USE_CXX11_ABI=${UPGUARD_TORCH_CXX11_ABI}) of ${UPGUARD_PYTHON}")

# The core libraries link into _C: they must use torch's std::string/std::list ABI too, not
# only the adapter's own files (TORCH_CXX_FLAGS reaches those). PyPI's torch before 2.7 was built
# with the old ABI; Debian's libgtest is built with the new one, so its tests cannot link then.
if(UPGUARD_TORCH_CXX11_ABI STREQUAL "0")
  add_compile_definitions(_GLIBCXX_USE_CXX11_ABI=0)
  if(UPGUARD_BUILD_TESTS)
    message(WARNING "torch of ${UPGUARD_PYTHON} uses the pre-C++11 string ABI: tests are not "
                    "built (Debian's gtest uses the new one); UPGUARD_BUILD_TESTS=OFF")
    set(UPGUARD_BUILD_TESTS OFF CACHE BOOL "" FORCE)
  endif()
endif()
