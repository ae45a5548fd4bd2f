// trainctl extend SWEEP --trials N | --device-hours H, and trainctl sweep --resume SWEEP: a
// search goes on (ExtendSearch). More trials or another budget; a search that ended or was
// cancelled resumes: its trials cancelled in flight run again from their checkpoints.
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/rpc.h"

namespace traind {

CLI::Validator DeviceHoursCheck(bool zero_is_none) {
  return CLI::Validator(
      [zero_is_none](std::string& text) -> std::string {
        double hours = 0;
        const bool number = absl::SimpleAtod(text, &hours);
        if (number && hours <= 1e5 && (hours > 0 || (zero_is_none && hours == 0))) return "";
        return absl::StrCat(zero_is_none ? "0 (no budget) to 100000"
                                         : "more than 0 and at most 100000 (leave it out for no "
                                           "budget)",
                            "; got ", text);
      },
      "HOURS");
}

int ExtendSearch(Context& ctx, const std::string& sweep, int trials,
                 std::optional<double> device_hours) {
  int64_t sweep_id = 0;
  if (int code = SweepId(ctx, sweep, &sweep_id); code != kExitOk) return code;
  trainer::v1::ExtendSearchRequest request;
  request.set_id(sweep_id);
  request.set_trials(trials);
  if (device_hours) request.set_device_hours(*device_hours);
  trainer::v1::Sweep extended;
  auto call = UnaryCall();
  if (grpc::Status status = ctx.stub().ExtendSearch(call.get(), request, &extended); !status.ok()) {
    return ctx.Fail(status);
  }
  if (ctx.json()) {
    ctx.PrintJson(extended, /*one_line=*/true);
    return kExitOk;
  }
  const trainer::v1::SearchSpec& search = extended.spec().search();
  ctx.out() << "search " << sweep_id << ": goes on, " << search.trials() << " trials planned";
  if (search.device_hours() > 0)
    ctx.out() << ", a budget of " << search.device_hours() << " device-hours";
  ctx.out() << "; follow with `trainctl watch --sweep " << sweep_id << "`\n";
  return kExitOk;
}

void AddExtendCommand(CLI::App& app, Context& ctx, int* exit_code) {
  struct Flags {
    std::string sweep;
    int trials = 0;
    std::optional<double> device_hours;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "extend", "Let a search go on: more trials, another budget (a search that ended resumes)");
  cmd->add_option("sweep", flags->sweep, "The search's sweep (its id or name)")->required();
  cmd->add_option("--trials", flags->trials, "Trials in all, at least those planned so far")
      ->check(CLI::Range(1, 100000));
  cmd->add_option_function<double>(
         "--device-hours", [flags](double hours) { flags->device_hours = hours; },
         "A budget of device-time for the whole search (0: none)")
      ->check(DeviceHoursCheck(/*zero_is_none=*/true));
  cmd->footer(
      "Examples:\n"
      "  trainctl extend 9 --trials 80\n"
      "  trainctl extend 9 --device-hours 6\n"
      "  trainctl sweep --resume 9     (a cancelled search goes on where it stopped)");
  cmd->callback([&ctx, exit_code, flags] {
    if (flags->trials == 0 && !flags->device_hours) {
      *exit_code = ctx.UsageError("extend: give --trials N or --device-hours H");
      return;
    }
    *exit_code = ExtendSearch(ctx, flags->sweep, flags->trials, flags->device_hours);
  });
}

}  // namespace traind
