#include "cli/rerun_request.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli/test_dir.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;
// A run of this user on this host whose meta.json's env holds loader and path variables
// beside a numerics one: the re-run sets the numerics one only.
TEST(RerunRequestTest, SetsOnlyTheNumericsEnvironment) {
  const ScopedTestDir temp("upguard_rerun_request_test");
  const std::string& dir = temp.path;
  const Whereabouts here = Whereabouts::Here();
  upguard::Run run;
  run.dir = dir;
  run.meta = {{"argv", {"/usr/bin/python3", "train.py"}},
              {"cwd", dir},
              {"cwd_real", fs::canonical(dir).string()},
              {"uid", here.uid},
              {"hostname", here.host},
              {"env",
               {{"OMP_NUM_THREADS", "2"},
                {"LD_PRELOAD", "/tmp/evil.so"},
                {"PYTHONPATH", "/tmp/evil"},
                {"LD_LIBRARY_PATH", "/tmp/evil"},
                {"PATH", "/tmp/evil"},
                {"CUBLAS_WORKSPACE_CONFIG", ":4096:8"}}}};
  std::ofstream(dir + "/meta.json") << run.meta.dump();
  StatusOr<std::shared_ptr<RerunConsent>> consent = RerunConsent::Make({}, false);
  ASSERT_TRUE(consent.ok());
  StatusOr<RecordRequest> request = RerunRequest(run, "A", "to go", dir + "/out", **consent);
  ASSERT_TRUE(request.ok()) << request.status().message();
  using Env = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(request->env, (Env{{"CUBLAS_WORKSPACE_CONFIG", ":4096:8"}, {"OMP_NUM_THREADS", "2"}}));
  EXPECT_EQ(request->cwd, dir);
  EXPECT_EQ(request->command, (std::vector<std::string>{"/usr/bin/python3", "train.py"}));
}

TEST(RerunRequestTest, RefusesARunThatIsNotOwnBeforeAnythingRuns) {
  const ScopedTestDir temp("upguard_rerun_request_test");
  const std::string& dir = temp.path;
  upguard::Run run;
  run.dir = dir;
  run.meta = {{"argv", {"/usr/bin/python3", "train.py"}}, {"env", {{"LD_PRELOAD", "x.so"}}}};
  std::ofstream(dir + "/meta.json") << run.meta.dump();
  StatusOr<std::shared_ptr<RerunConsent>> consent = RerunConsent::Make({}, false);
  ASSERT_TRUE(consent.ok());
  const Status status = RerunRequest(run, "B", "to go", dir + "/out", **consent).status();
  EXPECT_EQ(status.code(), StatusCode::kUntrusted);
  EXPECT_NE(status.message().find("run B (" + dir + ") is not known to be yours"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("LD_PRELOAD"), std::string::npos);
}

}  // namespace
}  // namespace upguard
