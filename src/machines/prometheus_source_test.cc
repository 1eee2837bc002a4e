#include "machines/prometheus_source.h"

#include <gtest/gtest.h>

#include <string>

namespace upguard::machines {
namespace {

// What Prometheus 2.42 answers to query_range for the agent's series (trimmed), plus a
// node_exporter series that is not upguard's and an upguard series without the machine label.
constexpr char kReply[] = R"({"status":"success","data":{"resultType":"matrix","result":[
 {"metric":{"__name__":"upguard_cpu_utilization","instance":"127.0.0.1:9400","job":"upguard",
            "machine":"node-0"},
  "values":[[1733331200,"0.5"],[1733331201,"0.25"],[1733331202,"NaN"]]},
 {"metric":{"__name__":"upguard_network_receive_bytes_per_second","interface":"eth0",
            "instance":"127.0.0.1:9401","job":"upguard","machine":"node-1"},
  "values":[[1733331200.5,"2000"]]},
 {"metric":{"__name__":"node_load1","instance":"127.0.0.1:9100","machine":"node-0"},
  "values":[[1733331200,"1"]]},
 {"metric":{"__name__":"upguard_cpu_utilization","instance":"10.0.0.9:9100"},
  "values":[[1733331200,"0.9"]]}]}})";

TEST(PrometheusSourceTest, ReadsTheAgentsSeriesAsSamples) {
  MetricSamples samples;
  size_t skipped = 0;
  const Status read = AppendQueryRange(kReply, "machine", "http://p", &samples, &skipped);
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(skipped, 2u);  // node_load1, and the series without a machine label
  EXPECT_EQ(samples.machines, (std::vector<std::string>{"node-0", "node-1"}));
  EXPECT_EQ(samples.metrics,
            (std::vector<std::string>{"cpu_utilization", "network_receive_bytes_per_second.eth0"}));
  ASSERT_EQ(samples.samples.size(), 3u);  // the NaN is a gap
  EXPECT_DOUBLE_EQ(samples.samples[1].time, 1733331201);
  EXPECT_DOUBLE_EQ(samples.samples[1].value, 0.25);
  EXPECT_EQ(samples.samples[2].machine, 1u);
  EXPECT_DOUBLE_EQ(samples.samples[2].time, 1733331200.5);
  EXPECT_DOUBLE_EQ(samples.samples[2].value, 2000);
}

TEST(PrometheusSourceTest, TheMachineLabelIsAnOption) {
  MetricSamples samples;
  size_t skipped = 0;
  ASSERT_TRUE(AppendQueryRange(kReply, "instance", "http://p", &samples, &skipped).ok());
  EXPECT_EQ(skipped, 1u);  // node_load1 only
  EXPECT_EQ(samples.machines,
            (std::vector<std::string>{"127.0.0.1:9400", "127.0.0.1:9401", "10.0.0.9:9100"}));
}

TEST(PrometheusSourceTest, ErrorsNameTheQueryAndPrometheusMessage) {
  MetricSamples samples;
  Status error = AppendQueryRange(
      R"({"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries"})",
      "machine", "http://p/api/v1/query_range", &samples, nullptr);
  EXPECT_EQ(error.message(),
            "http://p/api/v1/query_range: Prometheus answered bad_data: exceeded maximum "
            "resolution of 11,000 points per timeseries");
  error = AppendQueryRange("<html>Grafana</html>", "machine", "http://p", &samples, nullptr);
  EXPECT_NE(error.message().find("http://p: the reply is not JSON"), std::string::npos);
  error = AppendQueryRange(R"({"status":"success","data":{"resultType":"vector","result":[]}})",
                           "machine", "http://p", &samples, nullptr);
  EXPECT_NE(error.message().find("not a query_range reply"), std::string::npos);
  error = AppendQueryRange(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"upguard_x","machine":"a"},"values":[[1]]}]}})",
      "machine", "http://p", &samples, nullptr);
  EXPECT_NE(error.message().find("is not [time, \"value\"]"), std::string::npos);
}

TEST(PrometheusSourceTest, SplitsRangesAt11000Points) {
  auto pieces = SplitRange(1000, 1000 + 10999, 1);  // exactly 11,000 points: one query
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_DOUBLE_EQ(pieces[0].second, 11999);
  pieces = SplitRange(0, 22000, 1);  // 22,001 points
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_DOUBLE_EQ(pieces[0].first, 0);
  EXPECT_DOUBLE_EQ(pieces[0].second, 10999);
  EXPECT_DOUBLE_EQ(pieces[1].first, 11000);
  EXPECT_DOUBLE_EQ(pieces[1].second, 21999);
  EXPECT_DOUBLE_EQ(pieces[2].first, 22000);
  EXPECT_DOUBLE_EQ(pieces[2].second, 22000);
  pieces = SplitRange(0, 86400, 15);  // a day at 15 s: 5,761 points
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_DOUBLE_EQ(pieces[0].second, 86400);
  pieces = SplitRange(0, 7 * 86400, 0.5);  // a week at 0.5 s: every piece within the limit
  ASSERT_EQ(pieces.size(), 110u);
  for (const auto& [start, end] : pieces) EXPECT_LE((end - start) / 0.5 + 1, 11000.0 + 1e-6);
  EXPECT_TRUE(SplitRange(10, 5, 1).empty());
}

TEST(PrometheusSourceTest, ARefusedConnectionNamesTheUrl) {
  PrometheusQuery query;
  query.start = 0;
  query.end = 60;
  query.timeout = 5;
  StatusOr<MetricSamples> samples = ReadPrometheus("http://127.0.0.1:1", query);
  ASSERT_FALSE(samples.ok());
  EXPECT_NE(samples.status().message().find("cannot connect to http://127.0.0.1:1"),
            std::string::npos)
      << samples.status().message();
  EXPECT_NE(samples.status().message().find("is Prometheus running"), std::string::npos);
}

}  // namespace
}  // namespace upguard::machines
