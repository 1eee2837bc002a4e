// Which Python interpreter a command to record will run, and which torch that interpreter has,
// found before the command runs so that `upguard record` loads the adapter built for that torch
// (cli/adapter_select.h).
//
//   std::string python = CommandInterpreter({"torchrun", "--nproc_per_node=2", "train.py"},
//                                           std::getenv("PATH"));  // torchrun's shebang
//   ASSIGN_OR_RETURN(InterpreterFacts facts, ProbeInterpreter(python));
//   // facts.torch_version == "2.15.0", facts.torch_from_metadata, facts.soabi ...
//
// The probe runs cmake/interpreter_facts.py in the interpreter: torch's installed metadata is
// read without importing torch (about 0.1-0.5 s); only a torch without metadata is imported.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "upguard/status.h"

namespace upguard {

// True for the basename of a Python interpreter: python, python3, python3.11, python3.13t,
// python3.11d, pypy3.
bool IsPythonName(std::string_view name);

// The interpreter that the "#!" line at the start of `head` (a script's first bytes) names, or
// "" without one: "#!/usr/bin/env python3" -> "python3", "#!/venv/bin/python -u" ->
// "/venv/bin/python", "#!/usr/bin/env -S python3 -X dev" -> "python3". pip's script for a venv
// whose path is too long for a "#!" line ("#!/bin/sh" then `'''exec' "/long/python" "$0" "$@"`)
// names the python of its second line.
std::string ShebangInterpreter(std::string_view head);

// `name` as execvp finds it: a name with a '/' as it is; else the first executable regular file
// of that name in the ':'-separated `path_list`; "" when none.
std::string FindOnPath(const std::string& name, std::string_view path_list);

// The Python interpreter `command` runs, as a path or a name to look up on `path_list`; "" when
// it cannot be told (a shell script, a program that is not Python). Sees through leading
// `env [-i] [NAME=VALUE]...`, a python named directly, and a script's "#!" line (torchrun, any
// console script of a venv).
std::string CommandInterpreter(const std::vector<std::string>& command, std::string_view path_list);

// What the probe learnt of an interpreter.
struct InterpreterFacts {
  std::string python;         // the interpreter asked
  std::string soabi;          // sysconfig's SOABI, e.g. cpython-311-x86_64-linux-gnu
  std::string torch_version;  // "" when it has no torch
  // Whether torch_version is the installed distribution's version (importlib.metadata: "2.15.0",
  // Debian's "1.13.0a0+gitunknown") or, for a torch without metadata, torch.__version__.
  bool torch_from_metadata = false;
  std::string upguard_dir;  // the directory holding the `upguard` package it would import, or ""
};

// Parses the probe's `key value` lines (cmake/interpreter_facts.py). Unknown keys are skipped.
StatusOr<InterpreterFacts> ParseInterpreterFacts(std::string_view text, const std::string& python);

// Runs the probe in `python` (its environment is ours, so PYTHONPATH counts as it will for the
// command). Fails when the interpreter cannot be run or the probe fails.
StatusOr<InterpreterFacts> ProbeInterpreter(const std::string& python);

}  // namespace upguard
