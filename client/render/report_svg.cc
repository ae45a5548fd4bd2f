#include "client/render/report_svg.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/render/report_text.h"

namespace traind {

using trainer::v1::LossPoint;
using trainer::v1::ReportRow;
using trainer::v1::SweepReport;

namespace {

constexpr int kWidth = 900;
constexpr int kMargin = 20;

// Speedup chart: labels right-aligned against the bars, value labels to the bars' right.
constexpr int kLabelRight = 330;
constexpr int kBarLeft = 340;
constexpr int kBarMaxWidth = 480;
constexpr int kBarRowHeight = 24;
constexpr int kBarHeight = 16;
constexpr size_t kBarLabelChars = 46;  // what fits left of kLabelRight at 12 px

// Loss chart: plot area on the left, legend on the right.
constexpr int kPlotLeft = 70;
constexpr int kPlotRight = 560;
constexpr int kPlotHeight = 260;
constexpr int kLegendLeft = 590;
constexpr int kLegendRowHeight = 18;
constexpr size_t kLegendLabelChars = 44;

constexpr const char* kFasterColor = "#2f9e44";
constexpr const char* kSlowerColor = "#e8590c";
constexpr const char* kBaselineColor = "#868e96";
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        // XML 1.0 forbids most control characters; one in a flag would make the file unreadable.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

size_t CharCount(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; });
}

// Cuts at a UTF-8 character boundary so that a shortened label stays valid XML text.
std::string Truncate(const std::string& s, size_t max_chars) {
  if (CharCount(s) <= max_chars || max_chars == 0) return s;
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool starts_char = (s[i] & 0xC0) != 0x80;
    if (starts_char && chars++ == max_chars - 1) return absl::StrCat(s.substr(0, i), "\u2026");
  }
  return s;
}

std::string RowLabel(const ReportRow& row) {
  return row.options().empty() ? absl::StrCat(row.model(), " @ ", row.device())
                               : absl::StrCat(row.model(), " ", row.options(), " @ ", row.device());
}

// The device is what a CPU against GPU chart is read for, so the options give way first.
std::string ShortRowLabel(const ReportRow& row, size_t max_chars) {
  const std::string full = RowLabel(row);
  if (CharCount(full) <= max_chars) return full;
  const std::string suffix = absl::StrCat(" @ ", row.device());
  const size_t fixed = CharCount(row.model()) + 1 + CharCount(suffix);
  if (row.options().empty() || fixed + 8 > max_chars) return Truncate(full, max_chars);
  return absl::StrCat(row.model(), " ", Truncate(row.options(), max_chars - fixed), suffix);
}

std::string Text(double x, double y, const std::string& attrs, const std::string& text) {
  return absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\"%s>%s</text>\n", x, y, attrs, XmlEscape(text));
}

// A shortened label carries the full one as a tooltip.
std::string RowText(double x, double y, const std::string& attrs, const ReportRow& row,
                    size_t max_chars) {
  const std::string full = RowLabel(row);
  const std::string shown = ShortRowLabel(row, max_chars);
  const std::string tooltip =
      shown == full ? "" : absl::StrCat("<title>", XmlEscape(full), "</title>");
  return absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\"%s>%s%s</text>\n", x, y, attrs, tooltip,
                         XmlEscape(shown));
}

std::string Line(double x1, double y1, double x2, double y2, const std::string& attrs) {
  return absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"%s/>\n", x1, y1, x2,
                         y2, attrs);
}

bool HasSpeedup(const ReportRow& row) { return std::isfinite(row.speedup()) && row.speedup() > 0; }

const char* BarColor(double speedup) {
  if (speedup > 1) return kFasterColor;
  if (speedup < 1) return kSlowerColor;
  return kBaselineColor;
}

// Returns the y below the chart.
int AppendSpeedupChart(const SweepReport& report, int top, std::string* out) {
  absl::StrAppend(out, Text(kMargin, top, " font-size=\"14\" font-weight=\"bold\"",
                            absl::StrCat("Speedup against ", ReportBaseline(report),
                                         " (time per epoch; longer is faster)")));
  // The scale always reaches past 1x so that the reference line is inside the chart.
  double max_speedup = 1;
  for (const ReportRow& row : report.rows()) {
    if (HasSpeedup(row)) max_speedup = std::max(max_speedup, row.speedup());
  }
  const double px_per_x = kBarMaxWidth / (max_speedup * 1.05);
  const int bars_top = top + 26;
  int y = bars_top;
  for (const ReportRow& row : report.rows()) {
    const double text_y = y + kBarHeight / 2.0 + 4;
    absl::StrAppend(out, RowText(kLabelRight, text_y, " text-anchor=\"end\"", row, kBarLabelChars));
    if (HasSpeedup(row)) {
      const double width = std::max(1.0, row.speedup() * px_per_x);
      absl::StrAppendFormat(out,
                            "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n",
                            kBarLeft, y, width, kBarHeight, BarColor(row.speedup()));
      absl::StrAppend(
          out, Text(kBarLeft + width + 6, text_y, "", absl::StrFormat("%.2fx", row.speedup())));
    } else {
      absl::StrAppend(out,
                      Text(kBarLeft + 4, text_y,
                           absl::StrCat(" fill=\"", kBaselineColor, "\" font-style=\"italic\""),
                           "no baseline"));
    }
    y += kBarRowHeight;
  }
  const double one_x = kBarLeft + px_per_x;
  absl::StrAppend(out, Line(kBarLeft, bars_top - 4, kBarLeft, y, " stroke=\"#343a40\""));
  absl::StrAppend(
      out, Line(one_x, bars_top - 8, one_x, y, " stroke=\"#343a40\" stroke-dasharray=\"4 3\""));
  absl::StrAppend(out,
                  Text(one_x, bars_top - 11, " text-anchor=\"middle\" font-size=\"11\"", "1x"));
  return y;
}

// The accuracy each row reached, by the measure the report chose its best row by (test or best
// validation accuracy), as bars on a 0-100% scale, the best row's marked; nothing (returns `top`)
// when the best was chosen otherwise or not at all. An LR sweep is read by this, not by speed.
int AppendAccuracyChart(const SweepReport& report, int top, std::string* out) {
  const bool by_test = report.best_by() == "test accuracy";
  if (!by_test && report.best_by() != "best validation accuracy") return top;
  absl::StrAppend(out, Text(kMargin, top, " font-size=\"14\" font-weight=\"bold\"",
                            absl::StrCat(by_test ? "Test accuracy" : "Best validation accuracy",
                                         " (the best row marked)")));
  const int bars_top = top + 16;
  int y = bars_top;
  for (const ReportRow& row : report.rows()) {
    const double text_y = y + kBarHeight / 2.0 + 4;
    absl::StrAppend(out, RowText(kLabelRight, text_y, " text-anchor=\"end\"", row, kBarLabelChars));
    const bool measured = by_test ? row.tested() > 0 : row.validated() > 0;
    if (measured) {
      const double accuracy = by_test ? row.test_accuracy() : row.best_validation_accuracy();
      const double width = std::max(1.0, std::clamp(accuracy, 0.0, 1.0) * kBarMaxWidth);
      absl::StrAppendFormat(
          out, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", kBarLeft, y,
          width, kBarHeight, row.best() ? kFasterColor : kPalette[0]);
      absl::StrAppend(
          out, Text(kBarLeft + width + 6, text_y, "",
                    absl::StrFormat("%.2f%%%s", accuracy * 100, row.best() ? "  best" : "")));
    } else {
      absl::StrAppend(out,
                      Text(kBarLeft + 4, text_y,
                           absl::StrCat(" fill=\"", kBaselineColor, "\" font-style=\"italic\""),
                           "not measured"));
    }
    y += kBarRowHeight;
  }
  absl::StrAppend(out, Line(kBarLeft, bars_top - 4, kBarLeft, y, " stroke=\"#343a40\""));
  return y + 20;
}

struct Axis {
  double lo;
  double hi;
  double step;  // between tick labels
};

// Ticks at 1, 2 or 5 times a power of ten, about four of them, covering [lo, hi].
Axis NiceAxis(double lo, double hi) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / 4;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = 10 * magnitude;
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * magnitude) {
      step = m * magnitude;
      break;
    }
  }
  return {std::floor(lo / step) * step, std::ceil(hi / step) * step, step};
}

// Multiplied rather than accumulated, so that rounding cannot drop the last tick.
std::vector<double> Ticks(const Axis& axis) {
  std::vector<double> ticks;
  for (int k = 0; axis.lo + k * axis.step <= axis.hi + axis.step / 2; ++k) {
    ticks.push_back(axis.lo + k * axis.step);
  }
  return ticks;
}

bool IsFinite(const LossPoint& p) { return std::isfinite(p.epoch()) && std::isfinite(p.loss()); }

bool HasCurve(const ReportRow& row) {
  return std::any_of(row.loss_curve().begin(), row.loss_curve().end(), IsFinite);
}

struct Plot {
  Axis x;
  Axis y;
  int top;

  double X(double v) const {
    return kPlotLeft + (v - x.lo) / (x.hi - x.lo) * (kPlotRight - kPlotLeft);
  }
  double Y(double v) const { return top + kPlotHeight - (v - y.lo) / (y.hi - y.lo) * kPlotHeight; }
};

// Diverged runs report NaN or infinite losses; those points are left out rather than letting
// them stretch the axes.
Plot FitPlot(const SweepReport& report, int top) {
  double x_lo = 0, x_hi = 0, y_lo = 0, y_hi = 0;
  for (const ReportRow& row : report.rows()) {
    for (const LossPoint& p : row.loss_curve()) {
      if (!IsFinite(p)) continue;
      x_lo = std::min(x_lo, p.epoch());
      x_hi = std::max(x_hi, p.epoch());
      y_lo = std::min(y_lo, p.loss());
      y_hi = std::max(y_hi, p.loss());
    }
  }
  return {NiceAxis(x_lo, x_hi), NiceAxis(y_lo, y_hi), top};
}

void AppendAxes(const Plot& plot, std::string* out) {
  const int bottom = plot.top + kPlotHeight;
  absl::StrAppend(out, Line(kPlotLeft, plot.top, kPlotLeft, bottom, " stroke=\"#343a40\""));
  absl::StrAppend(out, Line(kPlotLeft, bottom, kPlotRight, bottom, " stroke=\"#343a40\""));
  for (double v : Ticks(plot.x)) {
    absl::StrAppend(out, Line(plot.X(v), bottom, plot.X(v), bottom + 4, " stroke=\"#343a40\""));
    absl::StrAppend(out, Text(plot.X(v), bottom + 17, " text-anchor=\"middle\" font-size=\"11\"",
                              absl::StrFormat("%g", v)));
  }
  for (double v : Ticks(plot.y)) {
    absl::StrAppend(out, Line(kPlotLeft, plot.Y(v), kPlotRight, plot.Y(v), " stroke=\"#e9ecef\""));
    absl::StrAppend(out, Text(kPlotLeft - 6, plot.Y(v) + 4, " text-anchor=\"end\" font-size=\"11\"",
                              absl::StrFormat("%g", v)));
  }
  absl::StrAppend(
      out, Text((kPlotLeft + kPlotRight) / 2.0, bottom + 34, " text-anchor=\"middle\"", "epoch"));
  absl::StrAppend(out, absl::StrFormat("<text x=\"%d\" y=\"%.1f\" text-anchor=\"middle\" "
                                       "transform=\"rotate(-90 %d %.1f)\">loss</text>\n",
                                       kMargin, plot.top + kPlotHeight / 2.0, kMargin,
                                       plot.top + kPlotHeight / 2.0));
}

void AppendCurve(const Plot& plot, const ReportRow& row, const char* color, std::string* out) {
  std::string points;
  for (const LossPoint& p : row.loss_curve()) {
    if (!IsFinite(p)) continue;
    absl::StrAppendFormat(&points, "%s%.1f,%.1f", points.empty() ? "" : " ", plot.X(p.epoch()),
                          plot.Y(p.loss()));
  }
  absl::StrAppendFormat(out,
                        "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\">"
                        "<title>%s</title></polyline>\n",
                        points, color, XmlEscape(RowLabel(row)));
}

// Returns the y below the chart.
int AppendLossChart(const SweepReport& report, int top, std::string* out) {
  absl::StrAppend(out, Text(kMargin, top, " font-size=\"14\" font-weight=\"bold\"",
                            "Training loss (first succeeded run of each row)"));
  const Plot plot = FitPlot(report, top + 20);
  AppendAxes(plot, out);
  int legend_y = plot.top;
  int curves = 0;
  for (int i = 0; i < report.rows_size(); ++i) {
    const ReportRow& row = report.rows(i);
    if (!HasCurve(row)) continue;
    const char* color = kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))];
    AppendCurve(plot, row, color, out);
    absl::StrAppend(out, Line(kLegendLeft, legend_y + 8, kLegendLeft + 18, legend_y + 8,
                              absl::StrCat(" stroke=\"", color, "\" stroke-width=\"3\"")));
    absl::StrAppend(
        out, RowText(kLegendLeft + 24, legend_y + 12, " font-size=\"11\"", row, kLegendLabelChars));
    legend_y += kLegendRowHeight;
    ++curves;
  }
  if (curves == 0) {
    absl::StrAppend(out, Text((kPlotLeft + kPlotRight) / 2.0, plot.top + kPlotHeight / 2.0,
                              absl::StrCat(" text-anchor=\"middle\" fill=\"", kBaselineColor, "\""),
                              "no loss curves recorded"));
  }
  return std::max(plot.top + kPlotHeight + 40, legend_y);
}

std::string Title(const SweepReport& report) {
  return report.name().empty() ? absl::StrFormat("Sweep %d", report.sweep_id())
                               : absl::StrFormat("Sweep %d: %s", report.sweep_id(), report.name());
}

}  // namespace

std::string ReportSvg(const SweepReport& report) {
  std::string body = Text(kMargin, 32, " font-size=\"18\" font-weight=\"bold\"", Title(report));
  absl::StrAppend(
      &body,
      Text(kMargin, 52, " fill=\"#495057\"",
           report.no_speedup_reason().empty()
               ? absl::StrFormat("%d/%d jobs finished; baseline %s", report.jobs_finished(),
                                 report.jobs_total(), ReportBaseline(report))
               : absl::StrFormat("%d/%d jobs finished; no speedup: %s", report.jobs_finished(),
                                 report.jobs_total(), report.no_speedup_reason())));
  // Nothing to compare: no bars, the loss curves right away.
  const int bars_bottom =
      report.no_speedup_reason().empty() ? AppendSpeedupChart(report, 90, &body) : 50;
  const int accuracy_bottom = AppendAccuracyChart(report, bars_bottom + 40, &body);
  const int height = AppendLossChart(report, accuracy_bottom + 20, &body) + kMargin;
  return absl::StrCat(
      absl::StrFormat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                      "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
                      kWidth, height, kWidth, height),
      // An explicit background keeps the dark text readable in dark-themed viewers.
      "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n", body, "</svg>\n");
}

}  // namespace traind
