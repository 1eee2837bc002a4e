#include "report/term_color.h"

#include <gtest/gtest.h>

namespace upguard {
namespace {

TEST(TermColor, PaintsTheVerdictAndTheSlots) {
  const std::string text =
      "  CULPRIT  step 2, forward, aten::gelu\n"
      "      self           float32[8, 32, 256]        identical  ded3ec8c\n"
      "      result0        float32[8, 32, 256]        DIFFERS    ae3c941e vs 067d67dc\n"
      "    module     identical.DIFFERS\n"
      "result: culprit\n";
  EXPECT_EQ(ColorizeDiffText(text),
            "  \033[1;31mCULPRIT\033[0m  step 2, forward, aten::gelu\n"
            "      self           float32[8, 32, 256]        \033[32midentical\033[0m  ded3ec8c\n"
            "      result0        float32[8, 32, 256]        \033[31mDIFFERS\033[0m    ae3c941e "
            "vs 067d67dc\n"
            "    module     identical.DIFFERS\n"  // inside a name: untouched
            "\033[1;31mresult: culprit\033[0m\n");
  EXPECT_EQ(ColorizeDiffText("  STRUCTURAL  step 2\nresult: identical"),
            "  \033[1;33mSTRUCTURAL\033[0m  step 2\n\033[1;32mresult: identical\033[0m");
}

TEST(TermColor, NoColorWins) {
  setenv("NO_COLOR", "1", 1);
  EXPECT_FALSE(ColorWanted(stdout));
  unsetenv("NO_COLOR");
}

}  // namespace
}  // namespace upguard
