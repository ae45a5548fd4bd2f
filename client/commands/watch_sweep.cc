// trainctl watch --sweep ID: one live line per member (state, epoch/batch, loss, time/epoch) until
// every member has finished. On a terminal the block is redrawn in place; otherwise a line is
// printed whenever a member changes state. Exit 0 when every member succeeded, 1 otherwise.
#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/interrupt_notice.h"
#include "client/render/event_renderer.h"
#include "client/rpc.h"
#include "client/sweep_members.h"
#include "common/job_result.h"
#include "common/log_format.h"
#include "common/sweep_fields.h"
#include "common/terminal_text.h"

namespace traind {

namespace {

using trainer::v1::Job;

bool Finished(Job::State s) {
  return s == Job::SUCCEEDED || s == Job::FAILED || s == Job::CANCELLED;
}

// The member's newest StepMetrics, for a running member's progress.
std::optional<trainer::v1::StepMetrics> LatestStep(Context& ctx, const Job& job) {
  trainer::v1::ListJobEventsRequest request;
  request.set_id(job.id());
  request.set_from_seq(std::max<int64_t>(1, job.last_seq() - 3));
  trainer::v1::ListJobEventsResponse response;
  auto call = UnaryCall();
  if (!ctx.stub().ListJobEvents(call.get(), request, &response).ok()) return std::nullopt;
  std::optional<trainer::v1::StepMetrics> latest;
  for (const auto& e : response.events()) {
    if (e.has_step()) latest = e.step();
  }
  return latest;
}

// What a member runs, told apart from the others by the values it differs in ("mlp lr=0.01",
// "train.py param.seed=2"); a matmul benchmark by its size and type.
std::string MemberWhat(const Job& job, const std::vector<std::string>& varying) {
  const auto& s = job.spec();
  if (s.has_benchmark() && s.benchmark().kind() == "matmul") {
    return absl::StrFormat("matmul %d %s", s.benchmark().size(),
                           TerminalSafe(s.benchmark().dtype()));
  }
  const std::string what =
      s.has_script() && !s.script().args().empty() ? s.script().args(0) : s.model();
  const std::string label = MemberLabel(s, varying);
  return TerminalSafe(absl::StrCat(what, label.empty() ? "" : " ", label));
}

// A finished member's result: only what it measured (common/job_result.h).
std::string MemberResult(const Job& job) {
  const auto& result = job.result();
  if (result.has_bench()) return absl::StrFormat(" %.4f s", result.bench().seconds());
  std::vector<std::string> parts;
  if (result.epoch_seconds_no_eval_size() > 0 && result.epoch_seconds_no_eval(0) > 0) {
    parts.push_back(absl::StrFormat("%.2f s/epoch", result.epoch_seconds_no_eval(0)));
  }
  if (ReportsTestAccuracy(job)) {
    parts.push_back(absl::StrFormat("test %.2f%%", result.test_accuracy() * 100));
  }
  if (ReportsValidation(job)) {
    parts.push_back(
        absl::StrFormat("best validation %.2f%%", result.best_validation_accuracy() * 100));
  }
  return parts.empty() ? "" : " " + absl::StrJoin(parts, ", ");
}

std::string MemberLine(const Job& job, const std::vector<std::string>& varying,
                       const std::optional<trainer::v1::StepMetrics>& step) {
  std::string line = absl::StrFormat("%6d %-9s %-7s %-22s", job.id(), StateName(job.state()),
                                     TerminalSafe(job.spec().device()), MemberWhat(job, varying));
  if (job.state() == Job::RUNNING && step.has_value()) {
    line += " " + ProgressLine(*step, 80);
  } else if (job.state() == Job::SUCCEEDED) {
    line += MemberResult(job);
  } else if (job.state() == Job::FAILED) {
    // One line: this block is redrawn by moving the cursor up a counted number of lines.
    std::string error = job.result().error();
    std::replace(error.begin(), error.end(), '\n', ' ');
    line += " " + TerminalSafe(error).substr(0, 60);
  }
  return line;
}

}  // namespace

int SweepId(Context& ctx, const std::string& id_or_name, int64_t* id) {
  const grpc::Status status = ResolveSweep(ctx.stub(), id_or_name, id);
  return status.ok() ? kExitOk : ctx.Fail(status);
}

int WatchSweep(Context& ctx, int64_t sweep_id) {
  trainer::v1::GetSweepRequest get;
  get.set_id(sweep_id);
  trainer::v1::Sweep sweep;
  auto call = UnaryCall();
  if (grpc::Status status = ctx.stub().GetSweep(call.get(), get, &sweep); !status.ok()) {
    return ctx.Fail(status);
  }
  const std::vector<std::string> varying = VaryingFields(sweep.spec());
  const InterruptNotice notice(SweepKeepsRunning(sweep_id), /*after_progress_bar=*/false);
  std::map<int64_t, Job::State> last_state;
  int lines_drawn = 0;
  while (true) {
    std::vector<Job> members;
    if (grpc::Status status = ListSweepMembers(ctx.stub(), sweep_id, {}, &members); !status.ok()) {
      return ctx.Fail(status);
    }
    int finished = 0, succeeded = 0;
    for (const Job& job : members) {
      finished += Finished(job.state()) ? 1 : 0;
      succeeded += job.state() == Job::SUCCEEDED ? 1 : 0;
    }
    if (ctx.out_is_terminal() && !ctx.json()) {
      if (lines_drawn > 0) ctx.out() << "\033[" << lines_drawn << "F";
      ctx.out() << "\033[2K"
                << absl::StrFormat("sweep %d: %d/%d finished", sweep_id, finished, members.size())
                << "\n";
      for (const Job& job : members) {
        ctx.out() << "\033[2K"
                  << MemberLine(job, varying,
                                job.state() == Job::RUNNING ? LatestStep(ctx, job) : std::nullopt)
                  << "\n";
      }
      lines_drawn = static_cast<int>(members.size()) + 1;
      ctx.out().flush();
    } else {
      for (const Job& job : members) {
        auto it = last_state.find(job.id());
        if (it != last_state.end() && it->second == job.state()) continue;
        last_state[job.id()] = job.state();
        if (ctx.json()) {
          ctx.PrintJson(job, /*one_line=*/true);
        } else {
          ctx.out() << MemberLine(job, varying, std::nullopt) << "\n";
        }
      }
      ctx.out().flush();
    }
    bool grows = false;  // a search that may still propose members
    if (grpc::Status status = SweepGrows(ctx.stub(), sweep_id, &grows); !status.ok()) {
      return ctx.Fail(status);
    }
    if (!grows && finished == static_cast<int>(members.size())) {
      // A search's failed trials are its business (counted, the search went on): it succeeded
      // when one did.
      if (sweep.spec().has_search()) return succeeded > 0 ? kExitOk : kExitJobFailed;
      return succeeded == finished ? kExitOk : kExitJobFailed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(ctx.out_is_terminal() ? 500 : 1000));
  }
}

}  // namespace traind
