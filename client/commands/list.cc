// trainctl list [--state S]... [--limit N | --all]: jobs, newest first.
#include "absl/strings/ascii.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/render/job_text.h"
#include "client/rpc.h"
#include "common/cli_checks.h"

namespace traind {

namespace {

struct ListFlags {
  std::vector<std::string> states;
  std::string sweep;  // an id or a name
  std::string model, device;
  int limit = 20;
  bool all = false;
};

int RunList(Context& ctx, const ListFlags& flags) {
  trainer::v1::ListJobsRequest request;
  for (const std::string& name : flags.states) {
    trainer::v1::Job::State state;
    if (!trainer::v1::Job::State_Parse(absl::AsciiStrToUpper(name), &state) ||
        state == trainer::v1::Job::STATE_UNSPECIFIED) {
      return ctx.UsageError("--state: unknown state '" + name +
                            "'; allowed: queued, running, paused, succeeded, failed, cancelled");
    }
    request.add_states(state);
  }
  if (!flags.sweep.empty()) {
    int64_t sweep_id = 0;
    if (int code = SweepId(ctx, flags.sweep, &sweep_id); code != kExitOk) return code;
    request.set_sweep_id(sweep_id);
  }
  request.set_model(flags.model);
  request.set_device(flags.device);
  trainer::v1::ListJobsResponse all;
  do {
    request.set_page_size(flags.all ? 1000 : std::min(flags.limit - all.jobs_size(), 1000));
    trainer::v1::ListJobsResponse page;
    auto call = UnaryCall();
    grpc::Status status = ctx.stub().ListJobs(call.get(), request, &page);
    if (!status.ok()) return ctx.Fail(status);
    for (auto& job : *page.mutable_jobs()) *all.add_jobs() = std::move(job);
    all.set_next_page_token(page.next_page_token());
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty() && (flags.all || all.jobs_size() < flags.limit));
  if (ctx.json()) {
    ctx.PrintJson(all);
  } else {
    ctx.out() << JobTable({all.jobs().begin(), all.jobs().end()});
  }
  return kExitOk;
}

}  // namespace

void AddListCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<ListFlags>();
  CLI::App* cmd = app.add_subcommand("list", "List jobs, newest first");
  cmd->add_option("--state", flags->states,
                  "Only jobs in this state (repeatable): queued, running, succeeded, failed, "
                  "cancelled, paused (a search's trial at its rung)");
  cmd->add_option("--limit,-n", flags->limit, "At most N jobs")
      ->capture_default_str()
      ->check(AtLeast(1));
  cmd->add_flag("--all,-a", flags->all, "Every job (pages through them all)");
  cmd->add_option("--sweep", flags->sweep, "Only this sweep's members (its id or name)");
  cmd->add_option("--model", flags->model, "Only this model");
  cmd->add_option("--device", flags->device, "Only this device");
  cmd->callback([&ctx, exit_code, flags] { *exit_code = RunList(ctx, *flags); });
}

}  // namespace traind
