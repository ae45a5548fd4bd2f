// trainctl sweeps [--name NAME] [--limit N | --all]: the sweeps, newest first, with what their
// members differ in and how far they got: the morning after, which one to `report`.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/render/job_text.h"
#include "client/rpc.h"
#include "common/cli_checks.h"
#include "common/terminal_text.h"

namespace traind {

namespace {

struct SweepsFlags {
  std::string name;
  int limit = 20;
  bool all = false;
};

// "2 succeeded, 1 running": the members' states, the ended ones first.
std::string MemberStates(const trainer::v1::SweepSummary& sweep) {
  std::vector<std::string> parts;
  const std::pair<int, const char*> counts[] = {{sweep.succeeded(), "succeeded"},
                                                {sweep.failed(), "failed"},
                                                {sweep.cancelled(), "cancelled"},
                                                {sweep.running(), "running"},
                                                {sweep.queued(), "queued"}};
  for (const auto& [count, state] : counts) {
    if (count > 0) parts.push_back(absl::StrCat(count, " ", state));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, ", ");
}

std::string SweepTable(const trainer::v1::ListSweepsResponse& response) {
  std::string out = absl::StrFormat("%-6s %-16s %-19s %-14s %-5s %-28s %s\n", "ID", "NAME",
                                    "CREATED", "WHAT", "JOBS", "STATES", "VARIES");
  for (const trainer::v1::SweepSummary& sweep : response.sweeps()) {
    absl::StrAppendFormat(&out, "%-6d %-16s %-19s %-14s %-5d %-28s %s\n", sweep.id(),
                          sweep.name().empty() ? "-" : TerminalSafe(sweep.name()),
                          FormatTimestamp(sweep.create_time()), TerminalSafe(sweep.what()),
                          sweep.jobs(), MemberStates(sweep), TerminalSafe(sweep.varies()));
  }
  return out;
}

int RunSweeps(Context& ctx, const SweepsFlags& flags) {
  trainer::v1::ListSweepsRequest request;
  request.set_name(flags.name);
  trainer::v1::ListSweepsResponse all;
  do {
    request.set_page_size(flags.all ? 1000 : std::min(flags.limit - all.sweeps_size(), 1000));
    trainer::v1::ListSweepsResponse page;
    auto call = UnaryCall();
    if (grpc::Status status = ctx.stub().ListSweeps(call.get(), request, &page); !status.ok()) {
      return ctx.Fail(status);
    }
    for (auto& sweep : *page.mutable_sweeps()) *all.add_sweeps() = std::move(sweep);
    all.set_next_page_token(page.next_page_token());
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty() && (flags.all || all.sweeps_size() < flags.limit));
  if (ctx.json()) {
    ctx.PrintJson(all);
  } else {
    ctx.out() << SweepTable(all);
  }
  return kExitOk;
}

}  // namespace

void AddSweepsCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<SweepsFlags>();
  CLI::App* cmd = app.add_subcommand(
      "sweeps", "List sweeps, newest first: what their members differ in, how far they got");
  cmd->add_option("--name", flags->name, "Only the sweeps of this name");
  cmd->add_option("--limit,-n", flags->limit, "At most N sweeps")
      ->check(AtLeast(1))
      ->capture_default_str();
  cmd->add_flag("--all", flags->all, "Every sweep");
  cmd->footer(
      "Examples:\n"
      "  trainctl sweeps\n"
      "  trainctl sweeps --name lr-search\n"
      "Then: trainctl report ID (or NAME), trainctl watch --sweep ID, trainctl cancel --sweep ID.");
  cmd->callback([&ctx, exit_code, flags] { *exit_code = RunSweeps(ctx, *flags); });
}

}  // namespace traind
