// trainctl devices: what traind can train on.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/rpc.h"
#include "common/log_format.h"
#include "common/terminal_text.h"

namespace traind {

namespace {

int RunDevices(Context& ctx) {
  trainer::v1::ListDevicesResponse response;
  auto call = UnaryCall();
  grpc::Status status = ctx.stub().ListDevices(call.get(), {}, &response);
  if (!status.ok()) return ctx.Fail(status);
  if (ctx.json()) {
    ctx.PrintJson(response);
    return kExitOk;
  }
  ctx.out() << absl::StrFormat("%-8s %-12s %-22s %-10s %s\n", "DEVICE", "MEMORY", "FREE", "RUNNING",
                               "DESCRIPTION");
  bool read_at_start = false;
  for (const auto& d : response.devices()) {
    std::string description = TerminalSafe(d.description());
    if (!d.capability().empty()) description += " (compute " + TerminalSafe(d.capability()) + ")";
    // The CPU's free memory is read for each call; a GPU's when traind started (marked *).
    const bool stale = d.name() != "cpu" && d.free_memory_bytes() > 0;
    read_at_start |= stale;
    std::vector<std::string> jobs;
    for (int64_t id : d.running_jobs()) jobs.push_back(absl::StrCat("job ", id));
    ctx.out() << absl::StrFormat("%-8s %-12s %-22s %-10s %s\n", TerminalSafe(d.name()),
                                 FormatBytes(d.total_memory_bytes()),
                                 FormatBytes(d.free_memory_bytes()) + (stale ? " *" : ""),
                                 jobs.empty() ? "-" : absl::StrJoin(jobs, ", "), description);
  }
  if (read_at_start) ctx.out() << "* when traind started; jobs report their own memory\n";
  ctx.out() << "LibTorch " << TerminalSafe(response.torch_version()) << "\n";
  return kExitOk;
}

}  // namespace

void AddDevicesCommand(CLI::App& app, Context& ctx, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("devices", "List the devices traind can train on");
  cmd->callback([&ctx, exit_code] { *exit_code = RunDevices(ctx); });
}

}  // namespace traind
