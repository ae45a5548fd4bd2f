#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "client/render/report_svg.h"
#include "client/render/report_text.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

using trainer::v1::ReportRow;
using trainer::v1::SweepReport;

void AddLossCurve(ReportRow* row, std::vector<std::pair<double, double>> points) {
  for (const auto& [epoch, loss] : points) {
    auto* p = row->add_loss_curve();
    p->set_epoch(epoch);
    p->set_loss(loss);
  }
}

ReportRow* AddRow(SweepReport* report, const std::string& model, const std::string& device,
                  const std::string& options, double speedup) {
  ReportRow* row = report->add_rows();
  row->set_model(model);
  row->set_dataset("mnist");
  row->set_device(device);
  row->set_options(options);
  row->set_config(options.empty() ? model : model + " " + options);
  row->set_batch_size(256);
  row->set_speedup(speedup);
  return row;
}

// A cpu baseline, a faster and a slower cuda row, and a failed row without a baseline.
SweepReport MakeReport() {
  SweepReport report;
  report.set_sweep_id(12);
  report.set_name("mnist cpu vs gpu");
  report.set_baseline_device("cpu");
  report.set_jobs_total(8);
  report.set_jobs_finished(7);
  report.set_best_by("test accuracy");

  ReportRow* cpu = AddRow(&report, "lenet5", "cpu", "threads=2", 1.0);
  cpu->set_runs(3);
  cpu->set_succeeded(3);
  cpu->set_epoch_seconds_median(5.49);
  cpu->set_epoch_seconds_min(5.40);
  cpu->set_epoch_seconds_max(5.60);
  cpu->set_samples_per_second(10929.4);
  cpu->set_test_accuracy(0.9874);
  cpu->set_tested(3);
  cpu->set_validated(3);
  cpu->set_best_validation_accuracy(0.9881);
  cpu->set_best(true);  // the best by test accuracy
  cpu->set_final_loss(0.0412);
  for (int id : {1, 2, 3}) cpu->add_job_ids(id);
  AddLossCurve(cpu, {{0.0, 2.30}, {0.5, 0.41}, {1.0, 0.12}, {2.0, 0.05}});

  ReportRow* gpu = AddRow(&report, "lenet5", "cuda:0", "amp=bf16 & channels_last", 2.31);
  gpu->set_runs(3);
  gpu->set_succeeded(3);
  gpu->set_epoch_seconds_median(2.3766);
  gpu->set_epoch_seconds_min(2.30);
  gpu->set_epoch_seconds_max(2.41);
  gpu->set_samples_per_second(25245.8);
  gpu->set_test_accuracy(0.9869);
  gpu->set_tested(3);
  gpu->set_final_loss(0.0433);
  gpu->set_peak_current_allocated_bytes(120 << 20);
  gpu->set_peak_driver_allocated_bytes(300 << 20);
  for (int id : {4, 5, 6}) gpu->add_job_ids(id);
  AddLossCurve(gpu, {{0.0, 2.31}, {0.5, 0.44}, {1.0, 0.13}, {2.0, 0.06}});

  ReportRow* slow = AddRow(&report, "vgg16", "cuda:0", "batch=8", 0.62);
  slow->set_runs(1);
  slow->set_succeeded(1);
  slow->set_epoch_seconds_median(8.85);
  slow->set_epoch_seconds_min(8.85);
  slow->set_epoch_seconds_max(8.85);
  slow->set_samples_per_second(6779);
  slow->set_test_accuracy(0.91);
  slow->set_tested(1);
  slow->set_final_loss(0.3);
  slow->set_peak_current_allocated_bytes(int64_t{2} << 30);
  slow->set_peak_driver_allocated_bytes(int64_t{3} << 30);
  slow->add_flags("accuracy 0.91 vs 0.97, below tolerance");
  slow->add_flags("loss | diverged");
  slow->add_flags("job 7 said \"CUDA out of memory\"");
  slow->add_job_ids(7);
  AddLossCurve(slow, {{0.0, 2.3}, {1.0, 0.3}});

  ReportRow* failed = AddRow(&report, "resnet18", "cuda:1", "", 0);
  failed->set_runs(1);
  failed->set_succeeded(0);
  failed->add_flags("all runs failed");
  failed->add_job_ids(8);
  return report;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(ReportTableTest, HeaderAndFormattedCells) {
  const std::vector<std::string> lines = Lines(ReportTable(MakeReport()));
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[0], "Sweep 12 (mnist cpu vs gpu): 7/8 jobs finished; speedup against cpu");
  EXPECT_TRUE(absl::StartsWith(lines[1], "MODEL")) << lines[1];
  for (const char* title : {"DEVICE", "BATCH", "OPTIONS", "RUNS", "S/EPOCH", "SAMPLES/S",
                            "TEST ACC", "PEAK MEM", "SPEEDUP", "FLAGS"}) {
    EXPECT_TRUE(absl::StrContains(lines[1], title)) << title;
  }
  EXPECT_TRUE(absl::StrContains(lines[2], "1.00x (baseline)")) << lines[2];
  EXPECT_TRUE(absl::StrContains(lines[2], "5.49 (5.40-5.60)")) << lines[2];
  EXPECT_TRUE(absl::StrContains(lines[2], "10929 ")) << lines[2];
  EXPECT_TRUE(absl::StrContains(lines[2], "98.74%")) << lines[2];
  EXPECT_TRUE(absl::StrContains(lines[3], "2.31x")) << lines[3];
  EXPECT_TRUE(absl::StrContains(lines[3], "120.0 MiB / 300.0 MiB")) << lines[3];
  EXPECT_TRUE(absl::StrContains(lines[3], "3/3")) << lines[3];
  // A single run has no spread to show.
  EXPECT_TRUE(absl::StrContains(lines[4], "8.85 ")) << lines[4];
  EXPECT_FALSE(absl::StrContains(lines[4], "(8.85-8.85)")) << lines[4];
  EXPECT_TRUE(absl::StrContains(
      lines[4], "accuracy 0.91 vs 0.97, below tolerance; loss | diverged; job 7 said"))
      << lines[4];
  EXPECT_TRUE(absl::StrContains(lines[5], "0/1")) << lines[5];
  EXPECT_FALSE(absl::StrContains(lines[5], "0.00%")) << lines[5];
  EXPECT_FALSE(absl::StrContains(lines[5], "0.00x")) << lines[5];
  // The best row is marked and named under the table.
  EXPECT_TRUE(absl::StartsWith(lines[2], "* lenet5")) << lines[2];
  EXPECT_TRUE(absl::StrContains(lines[2], "98.81%")) << lines[2];  // BEST VAL
  EXPECT_FALSE(absl::StartsWith(lines[3], "*")) << lines[3];
  EXPECT_EQ(lines[6], "Best by test accuracy: lenet5 threads=2 on cpu, 98.74% (jobs 1, 2, 3)");
}

TEST(ReportTableTest, RowsLeftOutOfALargeReportAreCountedUnderTheTable) {
  trainer::v1::SweepReport report = MakeReport();
  report.set_rows_not_shown(12);
  const std::vector<std::string> lines = Lines(ReportTable(report));
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[6],
            "12 more rows not shown (a report is kept under 3 MiB): trainctl export --sweep 12 "
            "has every job");
  EXPECT_TRUE(absl::StrContains(ReportMarkdown(report), "12 more rows not shown"));
}

TEST(ReportTableTest, ColumnsAreAligned) {
  const std::vector<std::string> lines = Lines(ReportTable(MakeReport()));
  ASSERT_EQ(lines.size(), 7u);
  const size_t device = lines[1].find("DEVICE");
  const size_t options = lines[1].find("OPTIONS");
  const size_t flags = lines[1].find("FLAGS");
  ASSERT_NE(device, std::string::npos);
  const std::vector<std::string> devices = {"cpu", "cuda:0", "cuda:0", "cuda:1"};
  const std::vector<std::string> all_options = {"threads=2", "amp=bf16 & channels_last", "batch=8"};
  for (size_t i = 0; i < devices.size(); ++i) {
    const std::string& line = lines[i + 2];
    EXPECT_EQ(line.substr(device, devices[i].size()), devices[i]) << line;
    if (i < all_options.size()) {
      EXPECT_EQ(line.substr(options, all_options[i].size()), all_options[i]) << line;
    }
    EXPECT_NE(line.back(), ' ') << line;
  }
  EXPECT_EQ(lines[4].substr(flags, 8), "accuracy");
  EXPECT_EQ(lines[5].substr(flags), "all runs failed");
}

TEST(ReportMarkdownTest, CaptionSeparatorAndEscapedPipes) {
  const std::string md = ReportMarkdown(MakeReport());
  EXPECT_TRUE(absl::StartsWith(
      md, "Sweep 12 (mnist cpu vs gpu): 7/8 jobs finished; speedup against cpu\n\n| MODEL |"))
      << md;
  const std::vector<std::string> lines = Lines(md);
  ASSERT_EQ(lines.size(), 1u + 2u + 4u + 1u) << md;  // caption, head, rows, the best
  EXPECT_TRUE(absl::StartsWith(lines[2], "|---|---|---:|---|")) << lines[2];
  EXPECT_TRUE(absl::StrContains(md, "loss \\| diverged")) << md;
  EXPECT_TRUE(absl::StrContains(lines[4], "| 2.31x |")) << lines[4];
  EXPECT_TRUE(absl::StrContains(lines[3], "| 1.00x (baseline) |")) << lines[3];
  // Every table line has the 12 columns' 13 unescaped pipes, flags included.
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    EXPECT_EQ(Count(lines[i], "|") - Count(lines[i], "\\|"), 13) << lines[i];
  }
  EXPECT_TRUE(absl::EndsWith(lines[5],
                             "| accuracy 0.91 vs 0.97, below tolerance; loss \\| "
                             "diverged; job 7 said \"CUDA out of memory\" |"))
      << lines[5];
}

TEST(ReportCsvTest, HeaderQuotingAndRecordCount) {
  const std::string csv = ReportCsv(MakeReport());
  const std::vector<std::string> records = absl::StrSplit(csv, "\r\n");
  ASSERT_EQ(records.size(), 1u + 4u + 1u) << csv;  // the last CRLF ends the last record
  EXPECT_EQ(records[0],
            "model,dataset,device,batch_size,options,runs,succeeded,epoch_seconds_median,"
            "epoch_seconds_min,epoch_seconds_max,samples_per_second,test_accuracy,final_loss,"
            "peak_current_allocated_bytes,peak_driver_allocated_bytes,speedup,flags,job_ids,"
            "scaling_efficiency,tested,validated,best_validation_accuracy,best");
  EXPECT_EQ(records[1],
            "lenet5,mnist,cpu,256,threads=2,3,3,5.49,5.4,5.6,10929.4,0.9874,0.0412,"
            "0,0,1,,1 2 3,0,3,3,0.9881,1");
  EXPECT_EQ(records[2],
            "lenet5,mnist,cuda:0,256,amp=bf16 & channels_last,3,3,2.3766,2.3,2.41,"
            "25245.8,0.9869,0.0433,125829120,314572800,2.31,,4 5 6,0,3,0,0,0");
  EXPECT_TRUE(absl::EndsWith(records[3],
                             ",0.62,\"accuracy 0.91 vs 0.97, below tolerance;loss | diverged;"
                             "job 7 said \"\"CUDA out of memory\"\"\",7,0,1,0,0,0"))
      << records[3];
  EXPECT_EQ(records[4],
            "resnet18,mnist,cuda:1,256,,1,0,0,0,0,0,0,0,0,0,0,all runs failed,8,0,0,0,0,0");
  EXPECT_EQ(records[5], "");
}

// The fill colours of the speedup bars, in row order; the background is the first rect.
std::vector<std::string> BarFills(const std::string& svg) {
  std::vector<std::string> fills;
  for (size_t pos = svg.find("<rect x="); pos != std::string::npos;
       pos = svg.find("<rect x=", pos + 1)) {
    const size_t start = svg.find("fill=\"", pos) + 6;
    fills.push_back(svg.substr(start, svg.find('"', start) - start));
  }
  return fills;
}

TEST(ReportSvgTest, DocumentChartsAndEscaping) {
  const std::string svg = ReportSvg(MakeReport());
  EXPECT_TRUE(absl::StartsWith(svg, "<svg")) << svg.substr(0, 100);
  EXPECT_TRUE(absl::EndsWith(svg, "</svg>\n"));
  EXPECT_TRUE(absl::StrContains(svg, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_FALSE(absl::StrContains(svg, "href")) << "must not reference anything outside itself";
  EXPECT_TRUE(absl::StrContains(svg, "Sweep 12: mnist cpu vs gpu"));

  // Three rows have loss curves; the failed one has none and no legend entry.
  EXPECT_EQ(Count(svg, "<polyline"), 3);
  EXPECT_EQ(Count(svg, "resnet18 @ cuda:1"), 2) << "two bar labels but no legend entry";

  EXPECT_TRUE(absl::StrContains(svg, "lenet5 amp=bf16 &amp; channels_last @ cuda:0"));
  EXPECT_FALSE(absl::StrContains(svg, " & ")) << "unescaped ampersand";
  EXPECT_TRUE(absl::StrContains(svg, ">1x</text>"));
  EXPECT_TRUE(absl::StrContains(svg, ">2.31x</text>"));
  EXPECT_TRUE(absl::StrContains(svg, ">0.62x</text>"));
  EXPECT_TRUE(absl::StrContains(svg, ">no baseline</text>"));
  EXPECT_EQ(Count(svg, "<text"), Count(svg, "</text>"));

  const std::vector<std::string> fills = BarFills(svg);
  ASSERT_EQ(fills.size(), 3u + 3u) << "one bar per row with a speedup, then with an accuracy";
  EXPECT_NE(fills[1], fills[2]) << "2.31x and 0.62x bars need different colours";
  EXPECT_NE(fills[0], fills[1]);
  // The accuracy chart: the best row's bar says so; the failed row measured nothing.
  EXPECT_TRUE(absl::StrContains(svg, ">Test accuracy (the best row marked)</text>")) << svg;
  EXPECT_TRUE(absl::StrContains(svg, ">98.74%  best</text>")) << svg;
  EXPECT_TRUE(absl::StrContains(svg, ">91.00%</text>")) << svg;
  EXPECT_TRUE(absl::StrContains(svg, ">not measured</text>")) << svg;
  EXPECT_NE(fills[3], fills[4]) << "the best row's bar stands out";
}

int SvgHeight(const std::string& svg) {
  const size_t start = svg.find("height=\"") + 8;
  return std::stoi(svg.substr(start, svg.find('"', start) - start));
}

TEST(ReportSvgTest, HeightGrowsWithRowsAndLongLabelsAreShortened) {
  SweepReport report = MakeReport();
  const int height = SvgHeight(ReportSvg(report));
  for (int i = 0; i < 20; ++i) {
    AddLossCurve(AddRow(&report, "mlp", "cuda:0",
                        "lr=0." + std::to_string(i) +
                            " threads=4 amp=fp16 channels_last=true "
                            "compile=max-autotune <tuned>",
                        1.5),
                 {{0, 1.0}, {1, 0.5}});
  }
  const std::string svg = ReportSvg(report);
  EXPECT_GT(SvgHeight(svg), height + 20 * 18);
  EXPECT_EQ(Count(svg, "<polyline"), 23);
  // Options give way to keep the device visible; the tooltip has the whole label.
  EXPECT_TRUE(absl::StrContains(svg, "\u2026 @ cuda:0</text>"));
  EXPECT_TRUE(absl::StrContains(svg, "&lt;tuned&gt; @ cuda:0</title>"));
  EXPECT_FALSE(absl::StrContains(svg, "<tuned>"));
}

TEST(ReportSvgTest, ShortenedLabelsCutBetweenUtf8Characters) {
  SweepReport report;
  report.set_baseline_device("cpu");
  std::string options;
  for (int i = 0; i < 60; ++i) options += "\u00e9";
  AddRow(&report, "mlp", "cpu", options, 1.0);
  const std::string svg = ReportSvg(report);
  // 46 characters fit left of the bars: "mlp ", 35 of the 60 options characters, an ellipsis and
  // " @ cpu".
  std::string shown;
  for (int i = 0; i < 35; ++i) shown += "\u00e9";
  EXPECT_TRUE(absl::StrContains(svg, ">mlp " + shown + "\u2026 @ cpu</text>")) << svg;
  EXPECT_TRUE(absl::StrContains(svg, ">no loss curves recorded</text>"));
}

TEST(ReportTextTest, DataParallelRowsShowTheirScalingEfficiency) {
  trainer::v1::SweepReport report;
  report.set_baseline("processes=1");
  trainer::v1::ReportRow* one = report.add_rows();
  one->set_model("lenet5");
  one->set_device("cpu");
  one->set_options("processes=1");
  one->set_is_baseline(true);
  one->set_speedup(1);
  one->set_scaling_efficiency(1);
  trainer::v1::ReportRow* two = report.add_rows();
  two->set_model("lenet5");
  two->set_device("cpu");
  two->set_options("processes=2");
  two->set_speedup(1.94);
  two->set_scaling_efficiency(0.97);
  const std::string table = ReportTable(report);
  EXPECT_NE(table.find("1.00x (baseline)"), std::string::npos) << table;
  EXPECT_NE(table.find("1.94x (97% scaling)"), std::string::npos) << table;
  const std::vector<std::string> records = absl::StrSplit(ReportCsv(report), "\r\n");
  ASSERT_GE(records.size(), 3u);
  EXPECT_TRUE(absl::EndsWith(records[2], ",0.97,0,0,0,0")) << records[2];  // then tested...best
}

// A sweep of one device compares nothing: the daemon says why instead of a baseline, and no row
// reads "1.00x (baseline)".
TEST(ReportTextTest, ASweepWithNothingToCompareSaysSo) {
  SweepReport report;
  report.set_sweep_id(3);
  report.set_no_speedup_reason("every run used device cpu");
  AddRow(&report, "lenet5", "cpu", "", 0);
  AddRow(&report, "mlp", "cpu", "", 0);
  const std::string table = ReportTable(report);
  EXPECT_FALSE(absl::StrContains(table, "baseline")) << table;
  EXPECT_TRUE(absl::StrContains(ReportMarkdown(report), "no speedup: every run used device cpu"));
  EXPECT_TRUE(absl::StrContains(ReportSvg(report), "no speedup: every run used device cpu"));
}

}  // namespace
}  // namespace traind
