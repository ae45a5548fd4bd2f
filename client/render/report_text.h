// Text renderings of a sweep report (`trainctl report`): an aligned table for the terminal, a
// GitHub markdown table to paste into a write-up comparing devices, and CSV for spreadsheets and
// plotting scripts. Pure functions; each returns the whole document, ending in a newline.
#ifndef TRAIND_CLIENT_RENDER_REPORT_TEXT_H_
#define TRAIND_CLIENT_RENDER_REPORT_TEXT_H_

#include <string>

#include "trainer/v1/trainer.pb.h"

namespace traind {

// "Sweep 12 (name): 6/6 jobs finished; speedup against cpu", then one aligned row per ReportRow
// with columns MODEL, DEVICE, BATCH, OPTIONS, RUNS, S/EPOCH, SAMPLES/S, TEST ACC, PEAK MEM,
// SPEEDUP and FLAGS.
std::string ReportTable(const trainer::v1::SweepReport& report);

// The same caption and columns as ReportTable, as a GitHub-flavoured markdown table.
std::string ReportMarkdown(const trainer::v1::SweepReport& report);

// What the report's speedups are against, for captions: the device ("cpu"), else FIELD=VALUE.
// "Best by best validation accuracy: param.lr=1e-1 on cpu, 91.00% (jobs 3)": the row that won
// (SweepReport.best_by), or "" when none did. The table marks it with "* ".
std::string BestLine(const trainer::v1::SweepReport& report);
// "12 more rows not shown ...: trainctl export --sweep 3 has every job" when the report left rows
// out (SweepReport.rows_not_shown); "" otherwise.
std::string RowsNotShownLine(const trainer::v1::SweepReport& report);

std::string ReportBaseline(const trainer::v1::SweepReport& report);

// RFC 4180 CSV (CRLF line ends) with unformatted values, one record per row after the header.
std::string ReportCsv(const trainer::v1::SweepReport& report);

// With `report --time-to-accuracy X`: per row, the median training and wall time until
// validation accuracy first reached X (min-max over the runs that did).
std::string ReportTimeToAccuracy(const trainer::v1::SweepReport& report, double threshold);

}  // namespace traind

#endif  // TRAIND_CLIENT_RENDER_REPORT_TEXT_H_
