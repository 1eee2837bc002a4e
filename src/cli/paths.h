// Where the CLI finds what it runs: the Python package, the examples, the interpreter.
#pragma once

#include <string>

namespace upguard {

// Directory holding the importable `upguard` package (…/python). $UPGUARD_PYTHONPATH wins;
// else <dir of the upguard binary>/python; else the build tree configured at compile time.
std::string PythonPackageDir();
// The repository's examples/ directory.
std::string ExamplesDir();
// The interpreter that imports torch ($UPGUARD_PYTHON, else the one found at configure time).
std::string PythonInterpreter();

}  // namespace upguard
