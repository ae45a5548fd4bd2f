// trainctl pause | resume | drain | retry ID: the queue as a whole.
//   pause:  start nothing new (persists across daemon restarts); running jobs go on.
//   resume: start jobs again.
//   drain:  pause, then wait until nothing runs.
//   retry:  queue a new job with the spec of a finished one; prints the new id.
#include <chrono>
#include <thread>

#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/rpc.h"

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
  auto id = std::make_shared<int64_t>(0);
  CLI::App* retry = app.add_subcommand("retry", "Queue a new job with a finished job's spec");
  retry->add_option("id", *id, "Job id")->required();
  retry->callback([&ctx, exit_code, id] {
    trainer::v1::RetryJobRequest request;
    request.set_id(*id);
    trainer::v1::Job job;
    auto call = UnaryCall();
    grpc::Status status = ctx.stub().RetryJob(call.get(), request, &job);
    if (!status.ok()) {
      *exit_code = ctx.Fail(status);
      return;
    }
    if (ctx.json()) {
      ctx.PrintJson(job);
    } else {
      ctx.out() << job.id() << "\n";
    }
    *exit_code = kExitOk;
  });
}

}  // namespace traind
