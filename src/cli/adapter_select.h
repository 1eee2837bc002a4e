// Which build of the adapter (the `upguard` Python package with its compiled `_C`) a recorded
// command loads: the one built for the torch of the command's interpreter.
//
//   ASSIGN_OR_RETURN(std::string package_dir, SelectAdapter(request.command, request.cwd));
//   // PYTHONPATH=<package_dir>/upguard/_bootstrap:<package_dir> for the command
//
// Every build writes upguard/_build_info.json beside _C (python/CMakeLists.txt): the torch
// version it was built for, read the way the probe reads it (cli/interpreter_probe.h), and the
// interpreter's SOABI. The candidates, first match wins:
//   1. $UPGUARD_PYTHONPATH, when set: the only one, checked like the others;
//   2. this binary's own package: <dir of binary>/python (a build tree), the site-packages of a
//      pip-installed binary, the build tree it was compiled in;
//   3. the other build directories beside those (build/release, build/torch-2.15.0-cp311, ...);
//   4. the `upguard` package the interpreter itself would import (a `pip install .` into it).
// A command whose interpreter cannot be told, or whose interpreter has no torch, loads this
// binary's own package as before (the bootstrap still checks, upguard/_build_check.py).
#pragma once

#include <string>
#include <vector>

#include "cli/interpreter_probe.h"
#include "upguard/status.h"

namespace upguard {

// One build of the adapter, as its _build_info.json describes it.
struct AdapterBuild {
  std::string package_dir;  // the directory holding upguard/ (what goes on PYTHONPATH)
  std::string upguard_version;
  std::string torch_version;       // torch.__version__ at build time
  std::string torch_dist_version;  // its installed distribution's version ("" if none)
  std::string python;              // the interpreter it was built with
  std::string python_soabi;
};

// Parses the text of <package_dir>/upguard/_build_info.json.
StatusOr<AdapterBuild> ParseAdapterBuild(const std::string& json_text,
                                         const std::string& package_dir);

// Reads <package_dir>/upguard/_build_info.json; NotFound when it or the compiled _C is missing.
StatusOr<AdapterBuild> ReadAdapterBuild(const std::string& package_dir);

// Whether `build` runs in the interpreter `facts` describe: same upguard release as this binary
// (the bootstrap's environment protocol), same SOABI, and the same torch version read the same
// way (distribution metadata against metadata, torch.__version__ against torch.__version__).
bool AdapterFits(const AdapterBuild& build, const InterpreterFacts& facts);

// The package directories to try, in order, without duplicates (see the header comment).
// `own_dirs` are this binary's own; their parents' other subdirectories */python follow.
std::vector<std::string> AdapterCandidates(const std::vector<std::string>& own_dirs,
                                           const std::string& interpreter_upguard_dir);

// The one error for an interpreter no candidate fits: its torch and the builds that were
// found, and the commands that build the right one from `source_dir`.
std::string AdapterMismatchMessage(const InterpreterFacts& facts,
                                   const std::vector<AdapterBuild>& found,
                                   const std::string& source_dir);

// The package directory for recording `command`, run in `cwd` ("" = ours): see the header
// comment. Fails (before the command runs) when the command's interpreter has a torch that no
// adapter found is built for.
StatusOr<std::string> SelectAdapter(const std::vector<std::string>& command,
                                    const std::string& cwd);

}  // namespace upguard
