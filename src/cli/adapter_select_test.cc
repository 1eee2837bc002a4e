// Picking the adapter built for a command's torch: build info parsed, the match rule, the
// order of the candidates, and the one error that names both torches and the fix.
#include "cli/adapter_select.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli/test_dir.h"
#include "upguard/version.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;

std::string BuildInfo(const std::string& torch, const std::string& dist,
                      const std::string& version = kUpguardVersion) {
  return R"({"upguard_version": ")" + version + R"(", "torch_version": ")" + torch +
         R"(", "torch_dist_version": ")" + dist +
         R"(", "python": "/venv/bin/python", "python_soabi": "cpython-311-x86_64-linux-gnu",
           "cxx11_abi": 1, "source_dir": "/src/upguard"})";
}

// A build tree's package: <build>/python/upguard/{_build_info.json, _C.<soabi>.so}.
std::string MakePackage(const std::string& build_dir, const std::string& info, bool with_c = true) {
  const std::string package = build_dir + "/python";
  fs::create_directories(package + "/upguard");
  std::ofstream(package + "/upguard/_build_info.json") << info;
  if (with_c) std::ofstream(package + "/upguard/_C.cpython-311-x86_64-linux-gnu.so") << "elf";
  return package;
}

InterpreterFacts Facts(const std::string& torch, bool from_metadata = true) {
  InterpreterFacts facts;
  facts.python = "/venv/bin/python";
  facts.soabi = "cpython-311-x86_64-linux-gnu";
  facts.torch_version = torch;
  facts.torch_from_metadata = from_metadata;
  return facts;
}

TEST(AdapterSelectTest, ParsesBuildInfo) {
  AdapterBuild build = ParseAdapterBuild(BuildInfo("2.15.0+cu132", "2.15.0"), "/b/python").value();
  EXPECT_EQ(build.package_dir, "/b/python");
  EXPECT_EQ(build.torch_version, "2.15.0+cu132");
  EXPECT_EQ(build.torch_dist_version, "2.15.0");
  EXPECT_EQ(build.python, "/venv/bin/python");
  EXPECT_EQ(build.python_soabi, "cpython-311-x86_64-linux-gnu");

  StatusOr<AdapterBuild> bad = ParseAdapterBuild("{not json", "/b/python");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/b/python/upguard/_build_info.json"), std::string::npos);
  EXPECT_FALSE(ParseAdapterBuild(R"({"torch_version": 3})", "/b/python").ok());
}

TEST(AdapterSelectTest, FitsOnlyTheSameTorchReadTheSameWay) {
  const AdapterBuild torch2 = ParseAdapterBuild(BuildInfo("2.15.0+cu132", "2.15.0"), "/b").value();
  EXPECT_TRUE(AdapterFits(torch2, Facts("2.15.0")));
  EXPECT_FALSE(AdapterFits(torch2, Facts("2.15.1")));
  EXPECT_FALSE(AdapterFits(torch2, Facts("2.15.0+cu132")));  // metadata says 2.15.0
  EXPECT_TRUE(AdapterFits(torch2, Facts("2.15.0+cu132", /*from_metadata=*/false)));
  EXPECT_FALSE(AdapterFits(torch2, Facts("2.15.0", /*from_metadata=*/false)));

  InterpreterFacts python312 = Facts("2.15.0");
  python312.soabi = "cpython-312-x86_64-linux-gnu";
  EXPECT_FALSE(AdapterFits(torch2, python312));

  // Another upguard release speaks another bootstrap protocol.
  const AdapterBuild older =
      ParseAdapterBuild(BuildInfo("2.15.0", "2.15.0", "0.0.1"), "/b").value();
  EXPECT_FALSE(AdapterFits(older, Facts("2.15.0")));

  // A build of a torch without metadata never matches a metadata answer by accident.
  const AdapterBuild no_dist = ParseAdapterBuild(BuildInfo("2.1.0", ""), "/b").value();
  EXPECT_FALSE(AdapterFits(no_dist, Facts("")));
}

TEST(AdapterSelectTest, ReadsOnlyFinishedBuilds) {
  const std::string dir = FreshTestDir("upguard_adapter_test");
  const std::string done = MakePackage(dir + "/done", BuildInfo("1.13.0a0", "1.13.0a0+gitunknown"));
  const std::string half = MakePackage(dir + "/half", BuildInfo("1.13.0a0", "x"), false);
  EXPECT_TRUE(ReadAdapterBuild(done).ok());
  StatusOr<AdapterBuild> no_c = ReadAdapterBuild(half);
  ASSERT_FALSE(no_c.ok());
  EXPECT_NE(no_c.status().message().find("no compiled _C"), std::string::npos);
  EXPECT_EQ(ReadAdapterBuild(dir + "/none").status().code(), StatusCode::kNotFound);
}

TEST(AdapterSelectTest, CandidatesAreOwnThenSiblingBuildsThenTheInterpreters) {
  const std::string dir = FreshTestDir("upguard_adapter_test");
  const std::string release = MakePackage(dir + "/build/release", BuildInfo("1.13.0a0", "x"));
  const std::string torch2 =
      MakePackage(dir + "/build/torch-2.15.0-cp311", BuildInfo("2.15.0", "y"));
  const std::string alpha = MakePackage(dir + "/build/alpha", BuildInfo("2.1.0", "z"));
  fs::create_directories(dir + "/build/not-a-build/python");
  const std::string site = dir + "/venv/lib/python3.11/site-packages";

  const std::vector<std::string> candidates =
      AdapterCandidates({release, dir + "/build/release/../release/python", ""}, site);
  const std::vector<std::string> expected = {release, alpha, torch2, site};
  EXPECT_EQ(candidates, expected);
}

TEST(AdapterSelectTest, MismatchMessageNamesBothTorchesAndTheFix) {
  const AdapterBuild debian =
      ParseAdapterBuild(
          R"({"upguard_version": ")" + std::string(kUpguardVersion) +
              R"(", "torch_version": "1.13.0a0", "torch_dist_version": "1.13.0a0+gitunknown",
                            "python": "/usr/bin/python3", "python_soabi": "cpython-311-x86_64-linux-gnu"})",
          "/src/build/release/python")
          .value();
  const std::string message = AdapterMismatchMessage(Facts("2.15.0"), {debian}, "/src/upguard");
  EXPECT_NE(message.find("/venv/bin/python runs torch 2.15.0 (cpython-311"), std::string::npos)
      << message;
  EXPECT_NE(message.find("torch 1.13.0a0 for /usr/bin/python3"), std::string::npos) << message;
  EXPECT_NE(message.find("make -C /src/upguard build PYTHON=/venv/bin/python"), std::string::npos)
      << message;
  EXPECT_NE(message.find("pip install --no-build-isolation /src/upguard"), std::string::npos)
      << message;
  EXPECT_NE(AdapterMismatchMessage(Facts("2.15.0"), {}, "/s").find("none found"),
            std::string::npos);
}

}  // namespace
}  // namespace upguard
