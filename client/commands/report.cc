// trainctl report SWEEP (id or name) [--format table|csv|json|markdown] [--plot FILE.svg]
// [--baseline cpu|FIELD=VALUE] The CPU-vs-GPU table people write by hand: one row per
// configuration, speedup against the baseline (a device, or another field's value: amp= for fp32),
// flags where results disagree.
#include <fstream>

#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/render/report_svg.h"
#include "client/render/report_text.h"
#include "client/render/search_text.h"
#include "client/rpc.h"
#include "client/sweep_members.h"

namespace traind {

namespace {

struct ReportFlags {
  std::string sweep;  // an id or a name
  std::string format = "table";
  std::string plot;
  std::string baseline = "cpu";
  double accuracy_tolerance = 0.02;
  double loss_tolerance = 0.25;
  double time_to_accuracy = 0;
};

int RunReport(Context& ctx, const ReportFlags& flags) {
  trainer::v1::GetSweepReportRequest request;
  int64_t sweep_id = 0;
  if (grpc::Status s = ResolveSweep(ctx.stub(), flags.sweep, &sweep_id); !s.ok()) {
    return ctx.Fail(s);
  }
  request.set_id(sweep_id);
  request.set_baseline(flags.baseline);
  // Daemons from before FIELD=VALUE read only this.
  if (flags.baseline.find('=') == std::string::npos) request.set_baseline_device(flags.baseline);
  request.set_accuracy_tolerance(flags.accuracy_tolerance);
  request.set_loss_tolerance(flags.loss_tolerance);
  request.set_time_to_accuracy(flags.time_to_accuracy);
  trainer::v1::SweepReport report;
  auto call = UnaryCall();
  grpc::Status status = ctx.stub().GetSweepReport(call.get(), request, &report);
  if (!status.ok()) return ctx.Fail(status);
  if (!flags.plot.empty()) {
    std::ofstream svg(flags.plot);
    svg << ReportSvg(report);
    if (!svg) return ctx.UsageError("--plot: cannot write " + flags.plot);
    ctx.err() << "report: wrote " << flags.plot << "\n";
  }
  const std::string format = ctx.json() ? "json" : flags.format;
  if (format == "json") {
    ctx.PrintJson(report);
  } else if (format == "csv") {
    ctx.out() << ReportCsv(report);
  } else if (format == "markdown") {
    ctx.out() << ReportMarkdown(report);
  } else {
    ctx.out() << ReportTable(report);
  }
  if (report.has_search() && (format == "table" || format == "markdown")) {
    ctx.out() << "\n" << SearchText(report.search());
  }
  if (flags.time_to_accuracy > 0 && (format == "table" || format == "markdown")) {
    ctx.out() << ReportTimeToAccuracy(report, flags.time_to_accuracy);
  }
  return kExitOk;
}

}  // namespace

void AddReportCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<ReportFlags>();
  CLI::App* cmd =
      app.add_subcommand("report", "A sweep's results: time/epoch, speedup, accuracy, memory");
  cmd->add_option("sweep", flags->sweep, "The sweep's id or name (`trainctl sweeps` lists them)")
      ->required();
  cmd->add_option("--format,-f", flags->format, "table | csv | json | markdown")
      ->check(CLI::IsMember({"table", "csv", "json", "markdown"}))
      ->capture_default_str();
  cmd->add_option("--plot", flags->plot, "Also write an SVG: speedup bars and loss curves");
  cmd->add_option("--baseline", flags->baseline,
                  "What the speedups are against: a device (cpu, cuda:0), or FIELD=VALUE to "
                  "compare rows that differ in that field (amp=fp32: bf16 rows against fp32 rows)")
      ->capture_default_str();
  cmd->add_option("--accuracy-tolerance", flags->accuracy_tolerance,
                  "Flag rows whose test accuracy differs from the baseline's by more (0..1)")
      ->capture_default_str();
  cmd->add_option("--loss-tolerance", flags->loss_tolerance,
                  "Flag rows whose final loss differs from the baseline's by more (relative)")
      ->capture_default_str();
  cmd->add_option("--time-to-accuracy", flags->time_to_accuracy,
                  "Also how long each configuration took until validation accuracy first "
                  "reached this fraction (training and wall time, medians over repeats)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->footer(
      "Examples:\n"
      "  trainctl report 3\n"
      "  trainctl report lr-search   # the sweep named so (sweep --name lr-search)\n"
      "  trainctl report 3 --baseline amp=fp32 --format markdown\n"
      "  trainctl report 3 --time-to-accuracy 0.89   # seconds until 89% validation accuracy");
  cmd->callback([&ctx, exit_code, flags] { *exit_code = RunReport(ctx, *flags); });
}

}  // namespace traind
