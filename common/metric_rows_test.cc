#include "common/metric_rows.h"

#include <gtest/gtest.h>

#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace traind {
namespace {

trainer::v1::JobEvent StepEvent() {
  trainer::v1::JobEvent event;
  event.set_seq(7);
  event.mutable_time()->set_seconds(1764504000);  // 2025-11-30T12:00:00Z
  event.mutable_time()->set_nanos(250000000);
  auto* step = event.mutable_step();
  step->set_epoch(2);
  step->set_batch(99);
  step->set_loss(0.1);
  step->set_learning_rate(0.001);
  step->set_samples_per_second(5120.5);
  step->set_step_seconds(0.0125);
  step->set_current_allocated_bytes(1048576);
  step->set_driver_allocated_bytes(2097152);
  return event;
}

TEST(MetricRowsTest, CsvRowHasOneCellPerHeaderColumnAndEmptyCellsForMissingValues) {
  const std::string header = MetricRowsHeader(RowFormat::kCsv);
  std::string rows;
  ASSERT_TRUE(AppendMetricRow(3, StepEvent(), RowFormat::kCsv, &rows));
  const std::vector<std::string> names = absl::StrSplit(header.substr(0, header.size() - 1), ',');
  const std::vector<std::string> cells = absl::StrSplit(rows.substr(0, rows.size() - 1), ',');
  ASSERT_EQ(names.size(), cells.size());
  EXPECT_EQ(rows,
            "3,7,2025-11-30T12:00:00.250Z,step,2,99,0.1,,,,0.001,5120.5,0.0125,1048576,2097152,\n");
}

// A program's own metrics: one cell in CSV, an object in JSON, by name in order.
TEST(MetricRowsTest, AProgramsOwnMetricsAreOneCellAndOneObject) {
  trainer::v1::JobEvent event = StepEvent();
  (*event.mutable_step()->mutable_metrics())["train/ece"] = 0.04;
  (*event.mutable_step()->mutable_metrics())["grad_norm"] = 1.25;
  std::string csv;
  ASSERT_TRUE(AppendMetricRow(3, event, RowFormat::kCsv, &csv));
  EXPECT_TRUE(absl::EndsWith(csv, ",2097152,grad_norm=1.25;train/ece=0.04\n")) << csv;
  std::string json;
  ASSERT_TRUE(AppendMetricRow(3, event, RowFormat::kJsonLines, &json));
  EXPECT_TRUE(absl::EndsWith(json, ",\"metrics\":{\"grad_norm\":1.25,\"train/ece\":0.04}}\n"))
      << json;
}

TEST(MetricRowsTest, JsonLinesNameEveryValueAndOmitMissingOnes) {
  trainer::v1::JobEvent event;
  event.set_seq(40);
  auto* epoch = event.mutable_epoch_summary();
  epoch->set_epoch(1);
  epoch->set_train_loss(0.5);
  epoch->set_train_accuracy(0.75);
  epoch->set_evaluated(true);
  epoch->set_validation_loss(0.625);
  epoch->set_validation_accuracy(0.8);
  std::string rows;
  ASSERT_TRUE(AppendMetricRow(3, event, RowFormat::kJsonLines, &rows));
  EXPECT_EQ(rows,
            "{\"job\":3,\"seq\":40,\"time\":\"1970-01-01T00:00:00.000Z\",\"kind\":\"epoch\","
            "\"epoch\":1,\"loss\":0.5,\"accuracy\":0.75,\"validation_loss\":0.625,"
            "\"validation_accuracy\":0.8}\n");  // no learning rate: it sent none
  EXPECT_EQ(MetricRowsHeader(RowFormat::kJsonLines), "");
}

TEST(MetricRowsTest, ADivergedLossIsAJsonStringNotAnInvalidNumber) {
  trainer::v1::JobEvent event = StepEvent();
  event.mutable_step()->set_loss(std::numeric_limits<double>::quiet_NaN());
  std::string rows;
  ASSERT_TRUE(AppendMetricRow(3, event, RowFormat::kJsonLines, &rows));
  EXPECT_NE(rows.find("\"loss\":\"nan\""), std::string::npos) << rows;
}

TEST(MetricRowsTest, EventsThatAreNotMetricsGiveNoRow) {
  trainer::v1::JobEvent event;
  event.mutable_log()->set_text("hello");
  std::string rows;
  EXPECT_FALSE(AppendMetricRow(3, event, RowFormat::kCsv, &rows));
  EXPECT_TRUE(rows.empty());
}

TEST(MetricRowsTest, UnknownFormatNamesTheFieldAndTheAllowedValues) {
  const auto format = ParseRowFormat("format", "xml");
  ASSERT_FALSE(format.ok());
  EXPECT_EQ(format.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(format.status().message(), "format: 'xml' is not one of: csv, jsonl");
}

}  // namespace
}  // namespace traind
