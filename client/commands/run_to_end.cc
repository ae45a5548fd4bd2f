// Submit, follow, fetch: what the verbs that wait for a job's result share (`bench`, `evaluate`).
#include <sstream>

#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/rpc.h"
#include "common/terminal_text.h"

namespace traind {

int RunJobToEnd(Context& ctx, const trainer::v1::SubmitJobRequest& request, const char* what,
                bool show_events, trainer::v1::Job* job) {
  {
    auto call = UnaryCall();
    grpc::Status status = ctx.stub().SubmitJob(call.get(), request, job);
    if (!status.ok()) return ctx.Fail(status);
  }
  if (!ctx.json()) ctx.err() << what << ": job " << job->id() << " queued\n";
  std::ostringstream sink;
  Context quiet = ctx.WithOutput(show_events ? ctx.out() : sink, /*out_is_terminal=*/false);
  quiet.options().output = "table";
  const int watched = WatchJob(quiet, job->id(), 0);
  if (watched == kExitUnreachable || watched == kExitUsage) return watched;
  trainer::v1::GetJobRequest get;
  get.set_id(job->id());
  auto call = UnaryCall();
  grpc::Status status = ctx.stub().GetJob(call.get(), get, job);
  if (!status.ok()) return ctx.Fail(status);
  if (job->state() != trainer::v1::Job::SUCCEEDED) {
    ctx.err() << "trainctl: " << what << " job " << job->id() << " "
              << trainer::v1::Job::State_Name(job->state()) << ": "
              << TerminalSafe(job->result().error(), /*keep_newlines=*/true) << "\n";
    return kExitJobFailed;
  }
  return kExitOk;
}

}  // namespace traind
