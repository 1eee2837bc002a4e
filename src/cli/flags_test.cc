#include "cli/flags.h"

#include <gtest/gtest.h>

namespace upguard {
namespace {

TEST(FlagsTest, ParsesValuesBooleansPositionalsAndRest) {
  const char* argv[] = {"upguard", "record", "-o",      "runs/a", "--steps=2:4", "--no-stats",
                        "extra",   "--",     "python3", "-u",     "train.py"};
  Flags flags("record", {{"out", 'o', true}, {"steps", 0, true}, {"no-stats", 0, false}});
  ASSERT_TRUE(flags.Parse(11, const_cast<char**>(argv), 2).ok());
  EXPECT_EQ(flags.Get("out"), "runs/a");
  EXPECT_EQ(flags.Get("steps"), "2:4");
  EXPECT_TRUE(flags.Has("no-stats"));
  EXPECT_EQ(flags.positionals(), std::vector<std::string>{"extra"});
  EXPECT_EQ(flags.rest(), (std::vector<std::string>{"python3", "-u", "train.py"}));
}

TEST(FlagsTest, ErrorsNameTheOption) {
  const char* unknown[] = {"upguard", "diff", "--jsn"};
  Flags flags("diff", {{"json", 0, false}});
  Status status = flags.Parse(3, const_cast<char**>(unknown), 2);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("'--jsn'"), std::string::npos);

  const char* missing[] = {"upguard", "show", "--step"};
  Flags show("show", {{"step", 0, true}});
  EXPECT_NE(show.Parse(3, const_cast<char**>(missing), 2).message().find("--step needs a value"),
            std::string::npos);

  const char* bad_int[] = {"upguard", "show", "--step", "two"};
  Flags show2("show", {{"step", 0, true}});
  ASSERT_TRUE(show2.Parse(4, const_cast<char**>(bad_int), 2).ok());
  EXPECT_NE(show2.GetInt("step", 0).status().message().find("'two'"), std::string::npos);
}

TEST(FlagsTest, KeepsEveryValueOfARepeatedFlag) {
  const char* argv[] = {"upguard", "diff", "--trust-run", "runs/a", "--trust-run=runs/b", "x"};
  Flags flags("diff", {{"trust-run", 0, true}});
  ASSERT_TRUE(flags.Parse(6, const_cast<char**>(argv), 2).ok());
  EXPECT_EQ(flags.GetAll("trust-run"), (std::vector<std::string>{"runs/a", "runs/b"}));
  EXPECT_EQ(flags.Get("trust-run"), "runs/b");
  EXPECT_TRUE(flags.GetAll("json").empty());
}

}  // namespace
}  // namespace upguard
