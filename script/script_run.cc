#include "script/script_run.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/artifact_names.h"
#include "common/cpu_threads.h"
#include "common/paths.h"
#include "common/program_pid_file.h"
#include "script/output_artifacts.h"
#include "script/program_launch.h"
#include "script/read_pacing.h"
#include "supervise/worker_exit.h"

namespace traind {

namespace {

using trainer::v1::JobEvent;
using trainer::v1::LogLine;

// While output floods (ReadPacer pauses between reads), the events it makes go to traind together
// this often: traind stores what arrives together in one transaction, and a commit (an fsync)
// for each of the 60 lines and steps a second it admits cost it more CPU than reading the flood
// cost the runner; at 100 ms, its ten commits a second were still half of traind's CPU.
constexpr absl::Duration kBusyEventsEvery = absl::Milliseconds(250);

void Stamp(JobEvent* event) {
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  event->mutable_time()->set_seconds(nanos / 1000000000);
  event->mutable_time()->set_nanos(static_cast<int32_t>(nanos % 1000000000));
}

}  // namespace

ScriptRun::ScriptRun(const trainer::v1::WorkerRequest& request, EventPipeWriter* events,
                     const StopFlags& stop, Options options)
    : request_(request),
      events_(events),
      stop_(stop),
      options_(options),
      output_(
          request.spec(), request.pause_after_epoch(), &memory_,
          [this](JobEvent event) { Send(std::move(event)); },
          [this](const std::string& text, LogLine::Severity severity) { Log(text, severity); }) {}

std::string ScriptRun::Private(const std::string& text) const {
  return absl::StrReplaceAll(text, {{request_.job_dir(), "<the job's directory>"}});
}

void ScriptRun::Send(JobEvent event) {
  const bool error = event.has_log() && event.log().severity() == LogLine::ERROR;
  if (options_.rank != 0 && !error) return;
  Stamp(&event);
  // traind gone: SIGUSR1 (its death signal) stops the program.
  (void)(hold_events_ ? events_->Buffer(event) : events_->Write(event));
}

void ScriptRun::Log(const std::string& text, LogLine::Severity severity) {
  JobEvent event;
  event.mutable_log()->set_severity(severity);
  event.mutable_log()->set_text(text);
  Send(std::move(event));
}

int ScriptRun::TakePausedMark() {
  if (request_.pause_after_epoch() <= 0 || options_.rank != 0) return 0;
  const std::string mark =
      absl::StrCat(request_.job_dir(), "/", kScriptCheckpointsFolder, "/", kScriptPausedMark);
  absl::StatusOr<std::string> text = ReadTextFile(mark);
  std::error_code ignored;
  std::filesystem::remove(mark, ignored);
  int epoch = 0;
  if (!text.ok() || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &epoch)) return 0;
  return epoch;
}

int ScriptRun::Fail(const std::string& why) {
  Log(Private(why), LogLine::ERROR);
  return kWorkerJobFailed;
}

int ScriptRun::Run() {
  if (request_.interpreter_path().empty()) return Fail("traind named no interpreter for the job");
  absl::StatusOr<PreparedProgram> prepared = PrepareProgram(
      request_, options_.rank, options_.program_nice,
      [this](const std::string& text, LogLine::Severity severity) { Log(text, severity); });
  if (!prepared.ok()) return Fail(std::string(prepared.status().message()));
  output_.KeepOutputIn(prepared->output_log_fd);
  const ProgramProcess::Options* options = &prepared->options;
  if (stop_.stop.load()) return kWorkerStopped;  // stopped before it started
  (void)TakePausedMark();  // the last run's: this run pauses (or not) on its own
  absl::StatusOr<std::unique_ptr<ProgramProcess>> program = ProgramProcess::Start(*options);
  if (!program.ok()) {
    return Fail(absl::StrCat("cannot start the program: ", program.status().message()));
  }
  WriteProgramPidFile(request_.job_dir(), options_.rank, (*program)->pid());
  if (prepared->resumed) {
    std::error_code error;
    const bool checkpointed =
        !std::filesystem::is_empty(absl::StrCat(request_.job_dir(), "/", kScriptCheckpointsFolder),
                                   error) &&
        !error;
    Log(checkpointed ? "Started again where the job left off: its working directory and its "
                       "checkpoints (TRAIND_CHECKPOINT_DIR) are as it left them"
                     : "Started again from the beginning: the program keeps no checkpoint in "
                       "TRAIND_CHECKPOINT_DIR (the traind package's save_checkpoint writes one)");
  }
  limits_ = prepared->limits;
  Log(absl::StrCat("Running ", absl::StrJoin(options->argv, " "), " on ",
                   request_.spec().device().empty() ? "cpu" : request_.spec().device(), " (pid ",
                   (*program)->pid(), ", ", request_.script_sources_size(),
                   " files in its working directory",
                   request_.sandbox().bwrap_path().empty() ? "" : "; in a bubblewrap sandbox",
                   limits_.empty() ? "" : "; ", limits_, ")"));
  if (absl::StartsWith(request_.spec().device(), "cuda")) {
    if (absl::Status gpu = memory_.WatchGpu(); !gpu.ok()) {
      Log(absl::StrCat("GPU memory is not sampled: ", gpu.message(),
                       " (the traind package's report() still sends what torch.cuda knows)"));
    }
  } else if (request_.spec().device().empty() || request_.spec().device() == "cpu") {
    memory_.WatchCpu(absl::Now(), UsableCores(ReadCpuFacts()));
  }
  if (options_.runner_nice > 0) (void)!nice(options_.runner_nice);  // the program is started
  Pump(**program);
  return Finish((*program)->Wait());
}

void ScriptRun::Pump(ProgramProcess& program) {
  absl::Time exited_at = absl::InfiniteFuture();
  absl::Time events_sent_at = absl::InfinitePast();
  // While output floods, let it gather in the pipe (ProgramProcess sizes it for this) and read it
  // in larger pieces: see read_pacing.h.
  ReadPacer pacer(std::min(program.pipe_capacity(ProgramProcess::Stream::kStdout),
                           program.pipe_capacity(ProgramProcess::Stream::kStderr)));
  hold_events_ = true;
  std::vector<ProgramProcess::Output> output;
  for (;;) {
    output.clear();
    const bool open = program.Read(absl::Milliseconds(200), &output);
    const absl::Time now = absl::Now();
    size_t bytes = 0;
    bool full = false;
    for (const ProgramProcess::Output& chunk : output) {
      bytes += chunk.bytes.size();
      full = full || chunk.pipe_nearly_full;
    }
    const absl::Duration pause = pacer.Next(bytes, full, now);
    const bool busy = pacer.flooding();
    for (const ProgramProcess::Output& chunk : output) output_.Handle(chunk, now);
    if ((stop_.stop.load() || !output_.stopped_reason().empty()) && !stop_sent_) {
      program.SignalGroup(SIGTERM);  // the traind package checkpoints on it; Python ends
      stop_sent_ = true;
      kill_at_ = now + options_.stop_grace;
    }
    if (now >= kill_at_) program.SignalGroup(SIGKILL);
    if (!open) break;
    if (exited_at == absl::InfiniteFuture() && program.HasExited()) {
      exited_at = now;
      program.SignalGroup(SIGKILL);  // what it left behind in its group
    }
    if (now - exited_at > options_.drain_after_exit) break;
    memory_.Sample(program.pid(), now);
    output_.AfterRead(!output.empty(), now);
    if (!busy || now - events_sent_at >= kBusyEventsEvery) {
      (void)events_->Flush();
      events_sent_at = now;
    }
    // Not while stopping or draining an ended program: neither may wait on the pauses.
    if (!stop_sent_ && exited_at == absl::InfiniteFuture()) absl::SleepFor(pause);
  }
  output_.Finish();
  (void)events_->Flush();
  hold_events_ = false;
}

void ScriptRun::KeepOutputs() {
  // Shutting down or traind gone (suspend): the job starts again later and keeps its files then.
  if (options_.rank != 0 || stop_.suspend.load()) return;
  const OutputLimits limits;
  absl::StatusOr<OutputArtifacts> outputs =
      CollectOutputArtifacts(absl::StrCat(request_.job_dir(), "/", kScriptOutputsFolder), limits);
  if (!outputs.ok() ||
      (outputs->files.empty() && outputs->skipped_total == 0 && outputs->not_listed == 0)) {
    return;
  }
  for (trainer::v1::Artifact& artifact : outputs->files) {
    JobEvent event;
    *event.mutable_artifact() = std::move(artifact);
    Send(std::move(event));
  }
  std::string kept = absl::StrCat("Kept ", outputs->files.size(),
                                  " files of TRAIND_OUTPUT_DIR as the job's artifacts (trainctl "
                                  "artifacts, trainctl download)");
  if (outputs->not_listed > 0) {
    absl::StrAppend(&kept, "; more are not listed (at most ", limits.max_files, " files, ",
                    limits.max_hashed_bytes >> 30, " GiB, ", limits.max_entries,
                    " entries looked at: put many files in one archive)");
  }
  if (outputs->skipped_total > 0) {
    absl::StrAppend(
        &kept, "; skipped ", outputs->skipped_total, ": ", absl::StrJoin(outputs->skipped, ", "),
        outputs->skipped_total > static_cast<int64_t>(outputs->skipped.size()) ? ", ..." : "");
  }
  Log(kept,
      outputs->skipped_total == 0 && outputs->not_listed == 0 ? LogLine::INFO : LogLine::WARNING);
}

int ScriptRun::Finish(const ProgramProcess::Exit& exit) {
  RemoveProgramPidFile(request_.job_dir(), options_.rank);  // it has ended, and its group with it
  KeepOutputs();
  const bool stopped_early = !output_.stopped_reason().empty();
  if (stop_.stop.load() && !stopped_early) {
    Log(absl::StrCat("The program was stopped (", exit.Describe(), ")"));
    return kWorkerStopped;
  }
  if (const int epoch = TakePausedMark(); epoch > 0 && exit.exit_code == 0) {
    Log(absl::StrCat("Paused after epoch ", epoch,
                     ", its rung, with its checkpoint: the search resumes it from there or ends "
                     "it"));
    return kWorkerPaused;
  }
  if (exit.exit_code != 0 && !stopped_early) {
    std::string why = absl::StrCat("The program ended with ", exit.Describe());
    if (!limits_.empty()) {
      absl::StrAppend(&why, " (", limits_, ")");
    }
    if (const std::vector<std::string> tail = output_.StderrTail(); !tail.empty()) {
      absl::StrAppend(&why, "; the last lines of its stderr:\n", absl::StrJoin(tail, "\n"));
      // A path it could read before its sandbox (a home folder) is not there now: say where.
      const bool missing = std::any_of(tail.begin(), tail.end(), [](const std::string& line) {
        return absl::StrContains(line, "No such file or directory");
      });
      if (missing && !request_.sandbox().bwrap_path().empty()) {
        absl::StrAppend(&why,
                        "\n(the program runs in a sandbox that holds its working directory, the "
                        "data roots and the system, nothing else: a folder of data elsewhere needs "
                        "traind --data-root FOLDER; docs/security.md)");
      }
    }
    return Fail(why);
  }
  JobEvent event;
  trainer::v1::FinalResult* result = event.mutable_final_result();
  *result = output_.result();
  const double wall = absl::ToDoubleSeconds(absl::Now() - started_);
  if (result->total_seconds() == 0) result->set_total_seconds(wall);
  if (result->total_training_seconds() == 0) result->set_total_training_seconds(wall);
  memory_.AddPeaks(result);
  if (stopped_early) {
    result->mutable_stopped()->set_reason(output_.stopped_reason());
    result->mutable_stopped()->set_epoch(output_.stopped_epoch());
  }
  Send(std::move(event));
  return kWorkerSucceeded;
}

}  // namespace traind
