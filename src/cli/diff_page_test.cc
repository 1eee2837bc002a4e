// One op, one number: the text report's "#N in step S", the JSON divergence, the HTML verdict
// card, the step table and the module tree all number the op the verdict names alike. Traces
// list ops in completion order, so a nested op (aten::native_layer_norm) is recorded before the
// op that encloses it (aten::layer_norm); the diff names the enclosing one when the cause (an
// eps that differs) reached the nested op through it.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "analysis/conclude.h"
#include "analysis/conclude_test_runs.h"
#include "cli/diff_html_writer.h"
#include "cli/test_dir.h"
#include "report/conclusion_report.h"
#include "report/diff_html.h"
#include "run/run_loader.h"
#include "trace/text_format.h"

namespace upguard {
namespace {

// Step 0: a linear layer, then ln_f's layer_norm (its kernel, native_layer_norm, nested and
// recorded first) and the head reading its output. `eps` is the layer norm's; `out` names its
// output's digest, `l2` that output's norm.
std::string LayerNormRun(const std::string& eps, const std::string& out, const std::string& l2) {
  return testing::Fill(R"(op step=0 phase=forward name=aten::addmm module=fc site=model.py:10
  in self tensor float32[64] digest=@bias
  in mat1 tensor float32[4,64] digest=@x
  in mat2 tensor float32[64,64] digest=@w
  out tensor float32[4,64] digest=@h stats=min:-2,max:2,mean:0,l2:16,finite:256
op step=0 phase=forward depth=1 name=aten::native_layer_norm module=ln_f site=model.py:20
  in input tensor float32[4,64] digest=@h
  in weight tensor float32[64] digest=@g
  in bias tensor float32[64] digest=@b
  in eps scalar {EPS}
  out tensor float32[4,64] digest=@{OUT} stats=min:-2,max:2,mean:0,l2:{L2},finite:256
  out tensor float32[4,1] digest=@mean
  out tensor float32[4,1] digest=@{OUT}-rstd
op step=0 phase=forward name=aten::layer_norm module=ln_f site=model.py:20
  in input tensor float32[4,64] digest=@h
  in normalized_shape scalar [64]
  in weight tensor float32[64] digest=@g
  in bias tensor float32[64] digest=@b
  in eps scalar {EPS}
  in cudnn_enable scalar True
  out tensor float32[4,64] digest=@{OUT} stats=min:-2,max:2,mean:0,l2:{L2},finite:256
op step=0 phase=forward name=aten::mm module=head site=model.py:21
  in self tensor float32[4,64] digest=@{OUT}
  in mat2 tensor float32[64,16] digest=@wh
  out tensor float32[4,16] digest=@{OUT}-logits
stepend 0
end
)",
                       {{"EPS", eps}, {"OUT", out}, {"L2", l2}});
}

TEST(DiffPage, TheVerdictCardTheStepTableAndTheModuleTreeNumberTheCulpritAlike) {
  const std::string dir = FreshTestDir("upguard_diff_page_test");
  for (const char* run : {"a", "b"}) std::filesystem::create_directories(dir + "/" + run);
  ASSERT_TRUE(WriteTraceFromText(LayerNormRun("1e-05", "n", "16"), "a", dir + "/a/rank0.ugt").ok());
  ASSERT_TRUE(
      WriteTraceFromText(LayerNormRun("1e-06", "n-eps", "16.01"), "b", dir + "/b/rank0.ugt").ok());
  LoadOptions load;
  load.index_on_demand = true;
  StatusOr<::upguard::Run> a = LoadRun(dir + "/a", load);
  StatusOr<::upguard::Run> b = LoadRun(dir + "/b", load);
  ASSERT_TRUE(a.ok() && b.ok());
  StatusOr<Conclusion> conclusion = ConcludeDiff(*a, *b, ConcludeOptions{});
  ASSERT_TRUE(conclusion.ok()) << conclusion.status().ToString();
  StatusOr<nlohmann::json> model = DiffPageModel(*conclusion, *a, *b);
  ASSERT_TRUE(model.ok()) << model.status().ToString();

  // The diff names aten::layer_norm, #2 in step 0 (native_layer_norm, #1, is inside it).
  const nlohmann::json& rank = (*model)["ranks"][0];
  EXPECT_EQ(rank["divergence"]["op"], "aten::layer_norm");
  EXPECT_EQ(rank["divergence"]["index"], 2);
  const std::string text = RenderConclusionText(*conclusion, *a, *b);
  EXPECT_NE(text.find("aten::layer_norm   (#2 in step 0, depth 0)"), std::string::npos) << text;
  const nlohmann::json& spread = rank["spread"];
  EXPECT_EQ(spread["divergent_index"], 2);
  EXPECT_EQ(spread["steps"][0]["first_differing"], 2);
  EXPECT_EQ(spread["ops"][1]["named"], 2);  // the nested kernel, named at its enclosing op

  const std::string page = RenderDiffHtml(*model);
  EXPECT_NE(page.find("<dt>op index</dt><dd>2 in A, 2 in B</dd>"), std::string::npos);
  EXPECT_NE(page.find("<td><span class=\"differs\">#2</span>"), std::string::npos);
  EXPECT_EQ(page.find("<span class=\"differs\">#1</span>"), std::string::npos);
  EXPECT_NE(page.find("2 differ, first #2,"), std::string::npos);  // the module tree
  EXPECT_EQ(page.find("first #1,"), std::string::npos);
  EXPECT_NE(page.find("<title>#2 aten::layer_norm ln_f (rel."), std::string::npos);
  EXPECT_NE(page.find("<title>#1 aten::native_layer_norm ln_f, inside #2 (rel."),
            std::string::npos);
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

}  // namespace
}  // namespace upguard
