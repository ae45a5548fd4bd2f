// trainctl pause | resume | drain | retry ID [flags]: the queue as a whole.
//   pause:  start nothing new (persists across daemon restarts); running jobs go on.
//   resume: start jobs again.
//   drain:  pause, then wait until nothing runs.
//   retry:  queue a new job with the spec of a finished one (flags change it); prints the new id.
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/rpc.h"
#include "client/spec_files.h"
#include "client/spec_flags.h"
#include "common/grpc_status.h"

namespace traind {

namespace {

using Action = trainer::v1::SetQueueStateRequest;

int SetState(Context& ctx, Action::Action action, trainer::v1::QueueState* state) {
  Action request;
  request.set_action(action);
  auto call = UnaryCall();
  grpc::Status status = ctx.stub().SetQueueState(call.get(), request, state);
  return status.ok() ? kExitOk : ctx.Fail(status);
}

void Print(Context& ctx, const trainer::v1::QueueState& state) {
  if (ctx.json()) {
    ctx.PrintJson(state, /*one_line=*/true);
    return;
  }
  ctx.out() << "queue " << (state.paused() ? "paused" : "running") << ": " << state.running()
            << " running, " << state.queued() << " queued\n";
}

// retry ID [flags]: the old job's spec, with the flags given changed (checked here as submit
// checks its flags), as a new job that remembers what it retries.
int Retry(Context& ctx, int64_t id, const SpecFlags& flags) {
  trainer::v1::RetryJobRequest request;
  request.set_id(id);
  if (AnySpecFlagGiven(flags)) {
    trainer::v1::GetJobRequest get;
    get.set_id(id);
    trainer::v1::Job old;
    auto call = UnaryCall();
    if (grpc::Status status = ctx.stub().GetJob(call.get(), get, &old); !status.ok()) {
      return ctx.Fail(status);
    }
    *request.mutable_spec() = old.spec();
    if (absl::Status s = ApplySpecFlags(flags, request.mutable_spec()); !s.ok()) {
      return ctx.UsageError(absl::StrCat("retry: ", s.message()));
    }
    // A data file the old job named stays a path on the daemon; a new --model-file is sent.
    if (absl::Status s =
            ResolveSpecFiles(ctx.stub(), /*upload=*/false, request.mutable_spec(), ctx.err());
        !s.ok()) {
      return ctx.Fail(ToGrpcStatus(s));
    }
  }
  trainer::v1::Job job;
  auto call = UnaryCall();
  grpc::Status status = ctx.stub().RetryJob(call.get(), request, &job);
  if (!status.ok()) return ctx.Fail(status);
  if (ctx.json()) {
    ctx.PrintJson(job);
  } else {
    ctx.out() << job.id() << "\n";
  }
  return kExitOk;
}

void AddRetryCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto id = std::make_shared<int64_t>(0);
  auto flags = std::make_shared<SpecFlags>();
  CLI::App* retry = app.add_subcommand(
      "retry", "Queue a new job with a finished job's spec; flags change it (--lr 1e-2)");
  retry->add_option("id", *id, "Job id")->required();
  AddSpecFlags(retry, flags.get());
  retry->footer(
      "Examples:\n"
      "  trainctl retry 12\n"
      "  trainctl retry 12 --lr 1e-2 --epochs 10   (job 12's spec with these changed)");
  retry->callback([&ctx, exit_code, id, flags] { *exit_code = Retry(ctx, *id, *flags); });
}

}  // namespace

void AddQueueCommands(CLI::App& app, Context& ctx, int* exit_code) {
  app.add_subcommand("pause", "Start no new jobs (running ones go on); survives restarts")
      ->callback([&ctx, exit_code] {
        trainer::v1::QueueState state;
        if ((*exit_code = SetState(ctx, Action::PAUSE, &state)) == kExitOk) Print(ctx, state);
      });
  app.add_subcommand("resume", "Start jobs again")->callback([&ctx, exit_code] {
    trainer::v1::QueueState state;
    if ((*exit_code = SetState(ctx, Action::RESUME, &state)) == kExitOk) Print(ctx, state);
  });
  app.add_subcommand("drain", "Pause, then wait until every running job has finished")
      ->callback([&ctx, exit_code] {
        trainer::v1::QueueState state;
        if ((*exit_code = SetState(ctx, Action::DRAIN, &state)) != kExitOk) return;
        int last_running = -1;
        while (state.running() > 0) {
          if (state.running() != last_running && !ctx.json()) {
            ctx.err() << "drain: waiting for " << state.running() << " running job(s)\n";
          }
          last_running = state.running();
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
          if ((*exit_code = SetState(ctx, Action::GET, &state)) != kExitOk) return;
        }
        Print(ctx, state);
      });
  AddRetryCommand(app, ctx, exit_code);
}

}  // namespace traind
