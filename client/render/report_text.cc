#include "client/render/report_text.h"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log_format.h"
#include "common/terminal_text.h"

namespace traind {

using trainer::v1::ReportRow;
using trainer::v1::SweepReport;

namespace {

struct Column {
  const char* title;
  bool numeric;  // right-aligned, so that digits line up
};

constexpr Column kColumns[] = {
    {"MODEL", false},   {"DEVICE", false},  {"BATCH", true},     {"OPTIONS", false},
    {"RUNS", true},     {"S/EPOCH", true},  {"SAMPLES/S", true}, {"TEST ACC", true},
    {"BEST VAL", true}, {"PEAK MEM", true}, {"SPEEDUP", true},   {"FLAGS", false},
};
constexpr size_t kNumColumns = sizeof(kColumns) / sizeof(kColumns[0]);

std::string Caption(const SweepReport& report) {
  const std::string name =
      report.name().empty() ? "" : absl::StrCat(" (", TerminalSafe(report.name()), ")");
  if (!report.no_speedup_reason().empty()) {
    return absl::StrFormat("Sweep %d%s: %d/%d jobs finished; no speedup: %s", report.sweep_id(),
                           name, report.jobs_finished(), report.jobs_total(),
                           TerminalSafe(report.no_speedup_reason()));
  }
  return absl::StrFormat("Sweep %d%s: %d/%d jobs finished; speedup against %s", report.sweep_id(),
                         name, report.jobs_finished(), report.jobs_total(),
                         TerminalSafe(ReportBaseline(report)));
}

// Medians and means of zero runs are zeros, not measurements; "-" keeps them from being read.
bool HasMeasurements(const ReportRow& row) { return row.succeeded() > 0; }

std::string EpochSeconds(const ReportRow& row) {
  if (!HasMeasurements(row)) return "-";
  std::string out = absl::StrFormat("%.2f", row.epoch_seconds_median());
  if (row.runs() > 1) {
    absl::StrAppendFormat(&out, " (%.2f-%.2f)", row.epoch_seconds_min(), row.epoch_seconds_max());
  }
  return out;
}

std::string PeakMemory(const ReportRow& row) {
  // CPU runs report no allocator statistics; "0 B / 0 B" would read as a measurement.
  if (row.peak_current_allocated_bytes() == 0 && row.peak_driver_allocated_bytes() == 0) {
    return "-";
  }
  // A program on the CPU: its resident memory, and no driver's figure to pair it with.
  if (row.peak_driver_allocated_bytes() == 0)
    return FormatBytes(row.peak_current_allocated_bytes());
  return absl::StrCat(FormatBytes(row.peak_current_allocated_bytes()), " / ",
                      FormatBytes(row.peak_driver_allocated_bytes()));
}

std::string Speedup(const ReportRow& row, const std::string& baseline_device) {
  // is_baseline comes from daemons that know other baselines than a device.
  if (row.is_baseline() || (!baseline_device.empty() && row.device() == baseline_device)) {
    return "1.00x (baseline)";
  }
  if (row.speedup() == 0) return "-";
  if (row.scaling_efficiency() > 0) {
    return absl::StrFormat("%.2fx (%.0f%% scaling)", row.speedup(), row.scaling_efficiency() * 100);
  }
  return absl::StrFormat("%.2fx", row.speedup());
}

std::vector<std::string> Cells(const ReportRow& row, const std::string& baseline_device) {
  const bool measured = HasMeasurements(row);
  return {
      absl::StrCat(row.best() ? "* " : "", row.model()),
      row.device(),
      row.batch_size() > 0 ? absl::StrCat(row.batch_size()) : "-",  // a program's is its own
      row.options(),
      absl::StrCat(row.succeeded(), "/", row.runs()),
      EpochSeconds(row),
      // A row whose runs reported steps but no epoch time has no rate: "-", not 0.
      measured && row.samples_per_second() > 0 ? absl::StrFormat("%.0f", row.samples_per_second())
                                               : "-",
      // What no run measured (a program that printed no test accuracy) is "-", never 0.
      measured && row.tested() > 0 ? absl::StrFormat("%.2f%%", row.test_accuracy() * 100) : "-",
      measured && row.validated() > 0
          ? absl::StrFormat("%.2f%%", row.best_validation_accuracy() * 100)
          : "-",
      PeakMemory(row),
      Speedup(row, baseline_device),
      absl::StrJoin(row.flags(), "; "),
  };
}

std::vector<std::string> Titles() {
  std::vector<std::string> titles;
  for (const Column& c : kColumns) titles.push_back(c.title);
  return titles;
}

// Flags carry error messages, which may span lines; one table row must stay one line, and no
// cell (a swept value, a job's error) may send the terminal an escape sequence.
std::string OneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return TerminalSafe(s);
}

// Terminal columns, counting each UTF-8 sequence once so that "µ" or "→" keep the table aligned.
size_t DisplayWidth(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; });
}

std::string Pad(const std::string& s, size_t width, bool right_align) {
  const std::string fill(width - std::min(width, DisplayWidth(s)), ' ');
  return right_align ? fill + s : s + fill;
}

void AppendAlignedLine(const std::vector<std::string>& cells, const std::vector<size_t>& widths,
                       std::string* out) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += "  ";
    line += Pad(cells[i], widths[i], kColumns[i].numeric);
  }
  line.erase(line.find_last_not_of(' ') + 1);  // the last column is left-aligned
  absl::StrAppend(out, line, "\n");
}

std::string MarkdownCell(const std::string& s) {
  std::string out;
  for (char c : OneLine(s)) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string MarkdownLine(const std::vector<std::string>& cells) {
  std::vector<std::string> escaped;
  for (const std::string& c : cells) escaped.push_back(MarkdownCell(c));
  return absl::StrCat("| ", absl::StrJoin(escaped, " | "), " |\n");
}

std::string MarkdownSeparator() {
  std::vector<std::string> parts;
  for (const Column& c : kColumns) parts.push_back(c.numeric ? "---:" : "---");
  return absl::StrCat("|", absl::StrJoin(parts, "|"), "|\n");
}

std::string CsvField(const std::string& raw) {
  // Quoted newlines are valid CSV; other control characters are escaped like everywhere else.
  const std::string s = TerminalSafe(raw, /*keep_newlines=*/true);
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string CsvNumber(double d) { return absl::StrFormat("%.6g", d); }

std::vector<std::string> CsvFields(const ReportRow& row) {
  return {
      row.model(),
      row.dataset(),
      row.device(),
      absl::StrCat(row.batch_size()),
      row.options(),
      absl::StrCat(row.runs()),
      absl::StrCat(row.succeeded()),
      CsvNumber(row.epoch_seconds_median()),
      CsvNumber(row.epoch_seconds_min()),
      CsvNumber(row.epoch_seconds_max()),
      CsvNumber(row.samples_per_second()),
      CsvNumber(row.test_accuracy()),
      CsvNumber(row.final_loss()),
      absl::StrCat(row.peak_current_allocated_bytes()),
      absl::StrCat(row.peak_driver_allocated_bytes()),
      CsvNumber(row.speedup()),
      absl::StrJoin(row.flags(), ";"),
      absl::StrJoin(row.job_ids(), " "),
      CsvNumber(row.scaling_efficiency()),
      absl::StrCat(row.tested()),
      absl::StrCat(row.validated()),
      CsvNumber(row.best_validation_accuracy()),
      row.best() ? "1" : "0",
  };
}

// New columns go at the end, so scripts that read columns by position keep working.
constexpr char kCsvHeader[] =
    "model,dataset,device,batch_size,options,runs,succeeded,epoch_seconds_median,"
    "epoch_seconds_min,epoch_seconds_max,samples_per_second,test_accuracy,final_loss,"
    "peak_current_allocated_bytes,peak_driver_allocated_bytes,speedup,flags,job_ids,"
    "scaling_efficiency,tested,validated,best_validation_accuracy,best";

}  // namespace

std::string BestLine(const SweepReport& report) {
  for (const ReportRow& row : report.rows()) {
    if (!row.best()) continue;
    const double value = report.best_by() == "test accuracy" ? row.test_accuracy() * 100
                         : report.best_by() == "final loss"  ? row.final_loss()
                                                             : row.best_validation_accuracy() * 100;
    const std::string what =
        OneLine(absl::StrCat(row.config().empty() ? row.options() : row.config(),
                             row.device().empty() ? "" : " on ", row.device()));
    return absl::StrFormat("Best by %s: %s, %s (jobs %s)\n", report.best_by(), what,
                           report.best_by() == "final loss" ? absl::StrFormat("%.4f", value)
                                                            : absl::StrFormat("%.2f%%", value),
                           absl::StrJoin(row.job_ids(), ", "));
  }
  return "";
}

std::string RowsNotShownLine(const SweepReport& report) {
  if (report.rows_not_shown() == 0) return "";
  return absl::StrFormat(
      "%d more rows not shown (a report is kept under 3 MiB): trainctl export --sweep %d has "
      "every job\n",
      report.rows_not_shown(), report.sweep_id());
}

std::string ReportBaseline(const SweepReport& report) {
  if (!report.baseline_device().empty() || report.baseline().empty())
    return report.baseline_device();
  return report.baseline();
}

std::string ReportTimeToAccuracy(const SweepReport& report, double threshold) {
  std::string out = absl::StrFormat(
      "\nTime to validation accuracy %.2f%% (median of the runs that reached it, min-max):\n",
      threshold * 100);
  for (const ReportRow& row : report.rows()) {
    const std::string what = absl::StrCat(OneLine(row.config()), " on ", OneLine(row.device()));
    if (row.reached() == 0) {
      absl::StrAppendFormat(&out, "  %-40s never (0 of %d runs)\n", what, row.succeeded());
      continue;
    }
    absl::StrAppendFormat(
        &out, "  %-40s training %.2f s (%.2f-%.2f), wall %.2f s from its start, %d of %d runs\n",
        what, row.time_to_accuracy_seconds(), row.time_to_accuracy_min(),
        row.time_to_accuracy_max(), row.wall_to_accuracy_seconds(), row.reached(), row.succeeded());
  }
  return out;
}

std::string ReportTable(const SweepReport& report) {
  std::vector<std::vector<std::string>> lines = {Titles()};
  for (const ReportRow& row : report.rows()) {
    std::vector<std::string> cells = Cells(row, report.baseline_device());
    for (std::string& c : cells) c = OneLine(std::move(c));
    lines.push_back(std::move(cells));
  }
  std::vector<size_t> widths(kNumColumns, 0);
  for (const auto& cells : lines) {
    for (size_t i = 0; i < kNumColumns; ++i)
      widths[i] = std::max(widths[i], DisplayWidth(cells[i]));
  }
  std::string out = absl::StrCat(Caption(report), "\n");
  for (const auto& cells : lines) AppendAlignedLine(cells, widths, &out);
  return out + RowsNotShownLine(report) + BestLine(report);
}

std::string ReportMarkdown(const SweepReport& report) {
  // The blank line keeps renderers from reading the caption as the table's first row.
  std::string out = absl::StrCat(MarkdownCell(Caption(report)), "\n\n", MarkdownLine(Titles()),
                                 MarkdownSeparator());
  for (const ReportRow& row : report.rows()) {
    absl::StrAppend(&out, MarkdownLine(Cells(row, report.baseline_device())));
  }
  for (const std::string& note : {RowsNotShownLine(report), BestLine(report)}) {
    if (!note.empty()) absl::StrAppend(&out, "\n", MarkdownCell(note), "\n");
  }
  return out;
}

std::string ReportCsv(const SweepReport& report) {
  std::string out = absl::StrCat(kCsvHeader, "\r\n");
  for (const ReportRow& row : report.rows()) {
    std::vector<std::string> fields;
    for (const std::string& f : CsvFields(row)) fields.push_back(CsvField(f));
    absl::StrAppend(&out, absl::StrJoin(fields, ","), "\r\n");
  }
  return out;
}

}  // namespace traind
