// trainctl export ID... | --sweep ID [--format csv|jsonl] [-o FILE [--force]]: every metric event
// of the jobs as rows (common/metric_rows.h: job, seq, time, kind, epoch, batch, loss, accuracy,
// memory, samples/s ...), for a spreadsheet, pandas or a plotting script. The file is written in
// full before it takes its name; without -o the rows go to stdout.
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/part_file.h"
#include "client/rpc.h"
#include "client/stored_events.h"
#include "common/metric_rows.h"

namespace traind {
namespace {

struct ExportFlags {
  std::vector<int64_t> ids;
  std::string sweep;  // an id or a name
  std::string format = "csv";
  std::string output;
  bool force = false;
};

int RunExport(Context& ctx, ExportFlags flags) {
  const absl::StatusOr<RowFormat> format = ParseRowFormat("--format", flags.format);
  if (!format.ok()) return ctx.UsageError(std::string(format.status().message()));
  if (flags.ids.empty() == flags.sweep.empty()) {
    return ctx.UsageError("export: name job ids or --sweep ID (one of them)");
  }
  if (!flags.output.empty() && !flags.force && access(flags.output.c_str(), F_OK) == 0) {
    return ctx.UsageError(
        absl::StrCat(flags.output, " exists; --force overwrites it, -o PATH writes elsewhere"));
  }
  if (!flags.sweep.empty()) {
    trainer::v1::GetSweepRequest request;
    int64_t sweep_id = 0;
    if (int code = SweepId(ctx, flags.sweep, &sweep_id); code != kExitOk) return code;
    request.set_id(sweep_id);
    trainer::v1::Sweep sweep;
    auto call = UnaryCall();
    const grpc::Status status = ctx.stub().GetSweep(call.get(), request, &sweep);
    if (!status.ok()) return ctx.Fail(status);
    flags.ids.assign(sweep.job_ids().begin(), sweep.job_ids().end());
  }
  std::string rows = MetricRowsHeader(*format);
  for (int64_t id : flags.ids) {
    const grpc::Status status = ForEachStoredEvent(
        ctx.stub(), id,
        [&](const trainer::v1::JobEvent& event) { AppendMetricRow(id, event, *format, &rows); });
    if (!status.ok()) return ctx.Fail(status);
  }
  if (flags.output.empty()) {
    ctx.out() << rows;
    ctx.out().flush();
    return kExitOk;
  }
  PartFile part(flags.output);
  if (!part.ok() || !part.Write(rows)) {
    return ctx.UsageError(absl::StrCat("cannot write ", flags.output, ": ", std::strerror(errno)));
  }
  const absl::Status kept = part.KeepAs(flags.output, flags.force);
  if (!kept.ok()) return ctx.UsageError(std::string(kept.message()));
  ctx.err() << "wrote " << flags.output << " (" << rows.size() << " bytes)\n";
  return kExitOk;
}

}  // namespace

void AddExportCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<ExportFlags>();
  CLI::App* cmd = app.add_subcommand("export", "Write jobs' metrics as CSV or JSON lines");
  cmd->footer(
      "Columns: job, seq, time, kind (step|epoch|final|evaluation|bench), epoch, batch, loss,\n"
      "accuracy, validation_loss, validation_accuracy, learning_rate, samples_per_second,\n"
      "step_seconds, current_bytes, driver_bytes, metrics (a program's own: grad_norm=1.2;...;\n"
      "a value an event lacks is left empty).\n"
      "Examples:\n"
      "  trainctl export 12 > job12.csv\n"
      "  trainctl export --sweep 3 --format jsonl -o sweep3.jsonl\n"
      "  python3 -c 'import pandas; "
      "print(pandas.read_csv(\"job12.csv\").query(\"kind==\\\"epoch\\\"\"))'");
  cmd->add_option("ids", flags->ids, "Job ids");
  cmd->add_option("--sweep", flags->sweep, "Every member of this sweep (its id or name) instead");
  cmd->add_option("--format", flags->format, "csv (default) or jsonl");
  cmd->add_option("-o,--output", flags->output, "Write to this file instead of stdout");
  cmd->add_flag("--force", flags->force, "Overwrite an existing file");
  cmd->callback([&ctx, exit_code, flags] { *exit_code = RunExport(ctx, *flags); });
}

}  // namespace traind
