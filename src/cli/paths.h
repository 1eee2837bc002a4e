// Where the CLI finds what it runs: the Python package, the examples, the interpreter.
#pragma once

#include <string>
#include <vector>

namespace upguard {

// Directory holding the importable `upguard` package (…/python). $UPGUARD_PYTHONPATH wins;
// else the first of OwnPythonPackageDirs() that holds the package; else the build tree
// configured at compile time. `upguard record` picks among more (cli/adapter_select.h).
std::string PythonPackageDir();
// This binary's own package directories, in order: <dir of the binary>/python (a build tree),
// the site-packages of a pip-installed binary (<dir of the binary>/../lib/python3.X/...), the
// build tree configured at compile time.
std::vector<std::string> OwnPythonPackageDirs();
// The source tree this binary was built from (for the commands that build another adapter).
std::string SourceDir();
// The repository's examples/ directory.
std::string ExamplesDir();
// The interpreter that imports torch ($UPGUARD_PYTHON, else the one found at configure time).
std::string PythonInterpreter();

}  // namespace upguard
