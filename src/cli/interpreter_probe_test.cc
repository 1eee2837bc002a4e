// Which interpreter a command runs: a python named directly, through `env`, or a script's "#!"
// line (torchrun, a venv's console scripts, pip's long-path form); and the probe's answer.
#include "cli/interpreter_probe.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "cli/test_dir.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;

std::string WriteScript(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  chmod(path.c_str(), 0755);
  return path;
}

TEST(InterpreterProbeTest, PythonNames) {
  for (const char* name :
       {"python", "python3", "python3.11", "python3.13t", "python3.11d", "pypy3", "pypy3.10"}) {
    EXPECT_TRUE(IsPythonName(name)) << name;
  }
  for (const char* name :
       {"torchrun", "bash", "python-config", "python3-dbg-config", "ipython", "pythonista", ""}) {
    EXPECT_FALSE(IsPythonName(name)) << name;
  }
}

TEST(InterpreterProbeTest, ShebangLines) {
  EXPECT_EQ(ShebangInterpreter("#!/venv/bin/python\nimport sys\n"), "/venv/bin/python");
  EXPECT_EQ(ShebangInterpreter("#!/venv/bin/python3.11 -u\n"), "/venv/bin/python3.11");
  EXPECT_EQ(ShebangInterpreter("#! /usr/bin/env python3\n"), "python3");
  EXPECT_EQ(ShebangInterpreter("#!/usr/bin/env -S python3 -X dev\n"), "python3");
  EXPECT_EQ(ShebangInterpreter("#!/usr/bin/env PYTHONHASHSEED=0 python3\n"), "python3");
  EXPECT_EQ(ShebangInterpreter("#!/bin/bash\necho hi\n"), "/bin/bash");
  EXPECT_EQ(ShebangInterpreter("import torch\n"), "");
  EXPECT_EQ(ShebangInterpreter("\x7f"
                               "ELF\x02\x01"),
            "");
  EXPECT_EQ(ShebangInterpreter("#!/usr/bin/python3"), "/usr/bin/python3");  // no newline
  // pip's console script when the venv's path is too long for a "#!" line.
  EXPECT_EQ(ShebangInterpreter("#!/bin/sh\n'''exec' \"/a/very/long/venv/bin/python\" \"$0\" "
                               "\"$@\"\n' '''\n"),
            "/a/very/long/venv/bin/python");
}

TEST(InterpreterProbeTest, FindsCommandsOnPathAsExecvpDoes) {
  const std::string dir = FreshTestDir("upguard_probe_test");
  fs::create_directories(dir + "/a");
  fs::create_directories(dir + "/b");
  std::ofstream(dir + "/a/tool") << "not executable";
  WriteScript(dir + "/b/tool", "#!/bin/sh\n");
  EXPECT_EQ(FindOnPath("tool", dir + "/a:" + dir + "/b"), dir + "/b/tool");
  EXPECT_EQ(FindOnPath("missing", dir + "/a:" + dir + "/b"), "");
  EXPECT_EQ(FindOnPath("./x/tool", "/nowhere"), "./x/tool");  // a path is not looked up
}

TEST(InterpreterProbeTest, CommandInterpreterSeesThroughLaunchersAndShebangs) {
  const std::string dir = FreshTestDir("upguard_probe_test");
  const std::string path = dir;
  WriteScript(dir + "/torchrun",
              "#!/venv/bin/python3.11\nfrom torch.distributed.run import main\n");
  WriteScript(dir + "/train.sh", "#!/bin/bash\npython3 train.py\n");
  WriteScript(dir + "/plain", "echo no shebang\n");
  EXPECT_EQ(CommandInterpreter({"/venv/bin/python", "train.py"}, path), "/venv/bin/python");
  EXPECT_EQ(CommandInterpreter({"python3", "-m", "torch.distributed.run", "t.py"}, path),
            "python3");
  EXPECT_EQ(CommandInterpreter({"env", "OMP_NUM_THREADS=1", "python3", "t.py"}, path), "python3");
  EXPECT_EQ(CommandInterpreter({"/usr/bin/env", "-i", "A=1", "/p/python", "t.py"}, path),
            "/p/python");
  EXPECT_EQ(CommandInterpreter({"torchrun", "--nproc_per_node=2", "t.py"}, path),
            "/venv/bin/python3.11");
  EXPECT_EQ(CommandInterpreter({dir + "/torchrun"}, "/nowhere"), "/venv/bin/python3.11");
  EXPECT_EQ(CommandInterpreter({"train.sh"}, path), "");  // a shell script: cannot be told
  EXPECT_EQ(CommandInterpreter({"plain"}, path), "");
  EXPECT_EQ(CommandInterpreter({"not-on-path"}, path), "");
  EXPECT_EQ(CommandInterpreter({"env"}, path), "");
}

TEST(InterpreterProbeTest, ParsesTheProbesAnswer) {
  InterpreterFacts facts = ParseInterpreterFacts(
                               "soabi cpython-311-x86_64-linux-gnu\ntorch-dist 2.15.0\n"
                               "upguard-dir /venv/lib/python3.11/site-packages\n",
                               "/venv/bin/python")
                               .value();
  EXPECT_EQ(facts.python, "/venv/bin/python");
  EXPECT_EQ(facts.soabi, "cpython-311-x86_64-linux-gnu");
  EXPECT_EQ(facts.torch_version, "2.15.0");
  EXPECT_TRUE(facts.torch_from_metadata);
  EXPECT_EQ(facts.upguard_dir, "/venv/lib/python3.11/site-packages");

  // A torch without metadata is imported: torch.__version__, compared as such.
  facts =
      ParseInterpreterFacts("soabi cpython-311-x86_64-linux-gnu\ntorch 2.1.0+git\n", "py").value();
  EXPECT_EQ(facts.torch_version, "2.1.0+git");
  EXPECT_FALSE(facts.torch_from_metadata);

  facts = ParseInterpreterFacts("soabi cpython-311-x86_64-linux-gnu\n", "py").value();
  EXPECT_EQ(facts.torch_version, "");  // no torch

  EXPECT_FALSE(ParseInterpreterFacts("garbage", "py").ok());
}

TEST(InterpreterProbeTest, ProbeFailsClearlyForAMissingInterpreter) {
  StatusOr<InterpreterFacts> facts = ProbeInterpreter("/nonexistent/python3");
  ASSERT_FALSE(facts.ok());
  EXPECT_NE(facts.status().message().find("/nonexistent/python3"), std::string::npos);
}

}  // namespace
}  // namespace upguard
