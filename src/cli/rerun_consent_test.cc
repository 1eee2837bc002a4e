#include "cli/rerun_consent.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "cli/test_dir.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;
bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A run directory whose meta.json says `meta`, as LoadRun would read it.
Run MakeRun(const std::string& dir, const nlohmann::json& meta) {
  fs::create_directories(dir);
  std::ofstream(dir + "/meta.json") << meta.dump();
  upguard::Run run;
  run.dir = dir;
  run.meta = meta;
  return run;
}

// What `upguard record` writes about who and where, for this process.
nlohmann::json OwnMeta(const std::string& cwd) {
  const Whereabouts here = Whereabouts::Here();
  return {{"argv", {"/usr/bin/python3", "train.py"}},
          {"cwd", cwd},
          {"cwd_real", fs::canonical(cwd).string()},
          {"uid", here.uid},
          {"user", here.user},
          {"hostname", here.host}};
}

TEST(RerunConsentTest, OwnRunOnThisHostIsOwn) {
  const ScopedTestDir temp("upguard_consent_test");
  const std::string& dir = temp.path;
  const upguard::Run run = MakeRun(dir + "/run", OwnMeta(dir));
  EXPECT_EQ(WhyNotOwn(run, Whereabouts::Here()), "");
}

TEST(RerunConsentTest, AnotherUserOrHostIsNotOwn) {
  const ScopedTestDir temp("upguard_consent_test");
  const std::string& dir = temp.path;
  nlohmann::json meta = OwnMeta(dir);
  const Whereabouts here = Whereabouts::Here();
  meta["uid"] = here.uid + 4242;
  meta["user"] = "mallory";
  meta["hostname"] = "elsewhere\x1b[2J";
  const std::string why = WhyNotOwn(MakeRun(dir + "/run", meta), here);
  EXPECT_TRUE(Has(why, "recorded by uid " + std::to_string(here.uid + 4242) + " (mallory)")) << why;
  // The terminal sees the escape written out, not obeyed.
  EXPECT_TRUE(Has(why, "recorded on host 'elsewhere\\x1b[2J'")) << why;
}

TEST(RerunConsentTest, OldRunWithoutWhoAndWhereIsNotOwn) {
  const ScopedTestDir temp("upguard_consent_test");
  const std::string& dir = temp.path;
  const upguard::Run run =
      MakeRun(dir + "/run", {{"argv", {"/usr/bin/python3", "train.py"}}, {"cwd", dir}});
  const std::string why = WhyNotOwn(run, Whereabouts::Here());
  EXPECT_TRUE(Has(why, "does not say who recorded it and where (no uid, hostname, cwd_real)"))
      << why;
}

TEST(RerunConsentTest, WorkingDirectoryGoneOrMovedIsNotOwn) {
  const ScopedTestDir temp("upguard_consent_test");
  const std::string& dir = temp.path;
  nlohmann::json gone = OwnMeta(dir);
  gone["cwd"] = dir + "/removed";
  EXPECT_TRUE(Has(WhyNotOwn(MakeRun(dir + "/a", gone), Whereabouts::Here()),
                  "its working directory " + dir + "/removed does not exist here"));

  fs::create_directories(dir + "/first");
  fs::create_directories(dir + "/second");
  fs::create_directory_symlink(dir + "/first", dir + "/link");
  const nlohmann::json moved = OwnMeta(dir + "/link");  // cwd_real: .../first
  fs::remove(dir + "/link");
  fs::create_directory_symlink(dir + "/second", dir + "/link");
  const std::string why = WhyNotOwn(MakeRun(dir + "/b", moved), Whereabouts::Here());
  EXPECT_TRUE(Has(why, "is " + fs::canonical(dir + "/second").string() + " now")) << why;
}

TEST(RerunConsentTest, MetadataWritableByEveryUserIsNotOwn) {
  const ScopedTestDir temp("upguard_consent_test");
  const std::string& dir = temp.path;
  const upguard::Run run = MakeRun(dir + "/run", OwnMeta(dir));
  chmod((dir + "/run/meta.json").c_str(), 0666);
  EXPECT_TRUE(Has(WhyNotOwn(run, Whereabouts::Here()), "meta.json is writable by every user"));
}

TEST(RerunConsentTest, RefusesWithTheExactCommandUnlessTrusted) {
  const ScopedTestDir temp("upguard_consent_test");
  const std::string& dir = temp.path;
  nlohmann::json meta = OwnMeta(dir);
  meta["hostname"] = "elsewhere";
  const upguard::Run run = MakeRun(dir + "/run", meta);
  RecordRequest request;
  request.command = {"/usr/bin/python3", "train.py", "--name", "it's mine"};
  request.cwd = dir + "/work dir";
  request.env = {{"OMP_NUM_THREADS", "1"}};

  StatusOr<std::shared_ptr<RerunConsent>> strict = RerunConsent::Make({}, false);
  ASSERT_TRUE(strict.ok());
  const Status refused = (*strict)->Allow(run, request, {"LD_PRELOAD", "PYTHONPATH"}, "A", "to go");
  EXPECT_EQ(refused.code(), StatusCode::kUntrusted);
  const std::string& text = refused.message();
  EXPECT_TRUE(Has(text, "run A (" + dir + "/run) is not known to be yours")) << text;
  EXPECT_TRUE(Has(text, "Re-running it to go would run, in '" + dir + "/work dir':")) << text;
  EXPECT_TRUE(Has(text, "/usr/bin/python3 train.py --name 'it'\\''s mine'")) << text;
  EXPECT_TRUE(Has(text, " OMP_NUM_THREADS=1\n")) << text;
  EXPECT_TRUE(Has(text,
                  "never sets (only the numerics variables upguard records): LD_PRELOAD "
                  "PYTHONPATH"))
      << text;
  EXPECT_TRUE(Has(text, "pass --trust-run " + dir + "/run")) << text;

  StatusOr<std::shared_ptr<RerunConsent>> trusting =
      RerunConsent::Make({dir + "/run/../run"}, false);
  ASSERT_TRUE(trusting.ok());
  EXPECT_TRUE((*trusting)->Allow(run, request, {}, "A", "to go").ok());
}

TEST(RerunConsentTest, TrustRunNamesADirectoryThatExists) {
  const ScopedTestDir temp("upguard_consent_test");
  const std::string& dir = temp.path;
  const Status status = RerunConsent::Make({dir + "/nope"}).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Has(status.message(), "--trust-run " + dir + "/nope: no such run directory"));
}

TEST(RerunConsentTest, ShellQuotedReadsBackAsTheWords) {
  EXPECT_EQ(ShellQuoted({"python3", "-c", "print(1)", "a b", "it's", ""}),
            "python3 -c 'print(1)' 'a b' 'it'\\''s' ''");
  EXPECT_EQ(ShellQuoted({"x\n\x1b[2J'"}), "$'x\\x0a\\x1b[2J\\''");
}

}  // namespace
}  // namespace upguard
