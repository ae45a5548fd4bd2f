#include "script/script_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/artifact_names.h"
#include "common/log_format.h"
#include "common/proc_file.h"
#include "common/program_pid_file.h"
#include "common/script_spec.h"
#include "common/status_macros.h"
#include "script/output_artifacts.h"
#include "script/read_pacing.h"
#include "script/sandbox.h"
#include "script/script_environment.h"
#include "script/working_copy.h"
#include "supervise/worker_exit.h"

extern char** environ;

namespace traind {

namespace {

using trainer::v1::JobEvent;
using trainer::v1::LogLine;

constexpr size_t kStderrTailLines = 20;
// While output floods (ReadPacer pauses between reads), the events it makes go to traind together
// this often: traind stores what arrives together in one transaction, and a commit (an fsync)
// for each of the 60 lines and steps a second it admits cost it more CPU than reading the flood
// cost the runner; at 100 ms, its ten commits a second were still half of traind's CPU.
constexpr absl::Duration kBusyEventsEvery = absl::Milliseconds(250);
// The program's whole output is kept in the job's directory up to this much; the store keeps what
// OutputBudget admits.
constexpr int64_t kOutputLogBytes = 64 << 20;
// A stored line of output costs the log budget one for each this many bytes (at least one).
constexpr double kLogLineUnit = 256;

void Stamp(JobEvent* event) {
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  event->mutable_time()->set_seconds(nanos / 1000000000);
  event->mutable_time()->set_nanos(static_cast<int32_t>(nanos % 1000000000));
}

// Puts `dir` first on the program's PYTHONPATH.
void AddPythonPath(std::vector<std::string>* environment, const std::string& dir) {
  for (std::string& entry : *environment) {
    if (absl::StartsWith(entry, "PYTHONPATH=")) {
      entry = absl::StrCat("PYTHONPATH=", dir, entry.size() > 11 ? ":" : "", entry.substr(11));
      return;
    }
  }
  environment->push_back("PYTHONPATH=" + dir);
}

// Sets NAME=value in the program's environment; an empty value removes it.
void SetVariable(std::vector<std::string>* environment, const std::string& name,
                 const std::string& value) {
  const std::string prefix = name + "=";
  environment->erase(
      std::remove_if(environment->begin(), environment->end(),
                     [&](const std::string& entry) { return absl::StartsWith(entry, prefix); }),
      environment->end());
  if (!value.empty()) environment->push_back(prefix + value);
}

// The traind package (python/traind), importable without installing it, and python/site's
// sitecustomize (stdout flushed every TRAIND_STDOUT_FLUSH_MS instead of line by line): beside the
// binaries in a build tree (build/python) or an install (lib/traind/python). Where it was found
// ("" where not).
std::string AddTraindPackage(std::vector<std::string>* environment) {
  std::error_code ignored;
  const std::filesystem::path bin = std::filesystem::read_symlink("/proc/self/exe", ignored);
  for (const char* relative : {"../python", "../lib/traind/python"}) {
    const std::filesystem::path root = (bin.parent_path() / relative).lexically_normal();
    if (!std::filesystem::is_directory(root / "traind", ignored)) continue;
    AddPythonPath(environment, root.string());
    if (std::filesystem::is_regular_file(root / "site" / "sitecustomize.py", ignored)) {
      AddPythonPath(environment, (root / "site").string());
      SetVariable(environment, "TRAIND_STDOUT_FLUSH_MS", "50");
      SetVariable(environment, "PYTHONUNBUFFERED", "");  // the flusher's job now
    }
    return root.string();
  }
  return "";
}

absl::Status MakeDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
}

// "each of its processes may allocate 256.0 MiB (traind --script-memory-limit) and write files of
// 1.0 MiB (traind --script-file-size-limit)"; empty without limits. Said when the program starts
// and when it fails, where a MemoryError or "File too large" would otherwise be a puzzle.
std::string DescribeLimits(const ProgramProcess::Options& program) {
  std::vector<std::string> parts;
  if (program.memory_bytes > 0) {
    parts.push_back(absl::StrCat("allocate ", FormatBytes(program.memory_bytes),
                                 " (traind --script-memory-limit)"));
  }
  if (program.file_size_bytes > 0) {
    parts.push_back(absl::StrCat("write files of ", FormatBytes(program.file_size_bytes),
                                 " (traind --script-file-size-limit)"));
  }
  if (parts.empty()) return "";
  return absl::StrCat("each of its processes may ", absl::StrJoin(parts, " and "));
}

}  // namespace

ScriptRun::ScriptRun(const trainer::v1::WorkerRequest& request, EventPipeWriter* events,
                     const StopFlags& stop, Options options)
    : request_(request), events_(events), stop_(stop), options_(options) {}

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

int ScriptRun::Fail(const std::string& why) {
  Log(Private(why), LogLine::ERROR);
  return kWorkerJobFailed;
}

absl::StatusOr<ProgramProcess::Options> ScriptRun::Prepare() {
  const std::string& job_dir = request_.job_dir();
  const std::string working_dir = job_dir + "/work";
  struct stat st;
  resumed_ = lstat(working_dir.c_str(), &st) == 0;  // an earlier start of this job made it
  RETURN_IF_ERROR(MakeWorkingCopy(request_.script_sources(), working_dir));
  ScriptDirectories directories{job_dir + "/checkpoints",
                                absl::StrCat(job_dir, "/", kScriptOutputsFolder), job_dir + "/tmp"};
  for (const std::string* dir :
       {&directories.checkpoints, &directories.outputs, &directories.temp}) {
    RETURN_IF_ERROR(MakeDirectory(*dir));
  }
  const std::string output_log =
      options_.rank == 0 ? "/output.log" : absl::StrCat("/output-rank", options_.rank, ".log");
  output_log_fd_ = open((job_dir + output_log).c_str(),
                        O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);

  std::vector<std::string> inherited;
  for (char** entry = environ; *entry != nullptr; ++entry) inherited.emplace_back(*entry);
  const char* job_devices = std::getenv("TRAIND_JOB_DEVICES");
  ProgramProcess::Options program;
  program.path = request_.interpreter_path();
  program.argv.push_back(request_.spec().script().interpreter().empty()
                             ? kDefaultInterpreter
                             : request_.spec().script().interpreter());
  const std::string& device = request_.spec().device();
  for (std::string& arg :
       ExpandScriptArgs(request_.spec().script(), absl::StartsWith(device, "cuda") ? "cuda"
                                                  : device.empty()                 ? "cpu"
                                                                                   : device)) {
    program.argv.push_back(std::move(arg));
  }
  program.environment =
      ScriptEnvironment(request_, directories, inherited, job_devices ? job_devices : "");
  if (resumed_) program.environment.push_back("TRAIND_RESUMED=1");
  const std::string package_root = AddTraindPackage(&program.environment);
  program.working_dir = working_dir;
  program.nice = options_.program_nice;
  program.memory_bytes =
      Attainable(RLIMIT_DATA, request_.program_limits().memory_bytes(), "--script-memory-limit");
  program.file_size_bytes = Attainable(RLIMIT_FSIZE, request_.program_limits().file_size_bytes(),
                                       "--script-file-size-limit");
  if (!request_.sandbox().bwrap_path().empty()) {
    SandboxView view;
    view.writable = {working_dir, directories.checkpoints, directories.outputs, directories.temp};
    view.read_only = InterpreterTrees(program.path);
    if (!package_root.empty()) view.read_only.push_back(package_root);
    view.working_dir = working_dir;
    if (const char* home = std::getenv("HOME"); home != nullptr) view.home = home;
    const char* world_size = std::getenv("WORLD_SIZE");
    view.share_dev_shm = world_size != nullptr && std::atoi(world_size) > 1;
    program.wrapper = SandboxCommand(request_.sandbox(), view);
  }
  return program;
}

int64_t ScriptRun::Attainable(int resource, int64_t requested, const char* flag) {
  const int64_t attainable = AttainableLimit(resource, requested);
  if (attainable < requested) {
    Log(absl::StrCat("traind ", flag, " asks for ", FormatBytes(requested),
                     ", more than the hard limit traind itself runs under: ",
                     FormatBytes(attainable), " applies"),
        LogLine::WARNING);
  }
  return attainable;
}

int ScriptRun::Run() {
  if (request_.interpreter_path().empty()) return Fail("traind named no interpreter for the job");
  absl::StatusOr<ProgramProcess::Options> options = Prepare();
  if (!options.ok()) return Fail(std::string(options.status().message()));
  if (stop_.stop.load()) return kWorkerStopped;  // stopped before it started
  absl::StatusOr<std::unique_ptr<ProgramProcess>> program = ProgramProcess::Start(*options);
  if (!program.ok()) {
    return Fail(absl::StrCat("cannot start the program: ", program.status().message()));
  }
  WriteProgramPidFile(request_.job_dir(), options_.rank, (*program)->pid());
  if (resumed_) {
    std::error_code error;
    const bool checkpointed =
        !std::filesystem::is_empty(request_.job_dir() + "/checkpoints", error) && !error;
    Log(checkpointed ? "Started again where the job left off: its working directory and its "
                       "checkpoints (TRAIND_CHECKPOINT_DIR) are as it left them"
                     : "Started again from the beginning: the program keeps no checkpoint in "
                       "TRAIND_CHECKPOINT_DIR (the traind package's save_checkpoint writes one)");
  }
  limits_ = DescribeLimits(*options);
  Log(absl::StrCat("Running ", absl::StrJoin(options->argv, " "), " on ",
                   request_.spec().device().empty() ? "cpu" : request_.spec().device(), " (pid ",
                   (*program)->pid(), ", ", request_.script_sources_size(),
                   " files in its working directory",
                   request_.sandbox().bwrap_path().empty() ? "" : "; in a bubblewrap sandbox",
                   limits_.empty() ? "" : "; ", limits_, ")"));
  if (absl::StartsWith(request_.spec().device(), "cuda")) {
    absl::StatusOr<std::unique_ptr<GpuProcessMemory>> gpu_memory = GpuProcessMemory::Open();
    if (gpu_memory.ok()) {
      gpu_memory_ = *std::move(gpu_memory);
    } else {
      Log(absl::StrCat("GPU memory is not sampled: ", gpu_memory.status().message(),
                       " (the traind package's report() still sends what torch.cuda knows)"));
    }
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
    for (const ProgramProcess::Output& chunk : output) HandleOutput(chunk, now);
    if ((stop_.stop.load() || !stopped_reason_.empty()) && !stop_sent_) {
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
    // An epoch's summary waits for the line after it (its time); a program that goes quiet after
    // one (evaluating, waiting) still shows it.
    if (!output.empty()) {
      last_output_at_ = now;
    } else if (now - last_output_at_ > absl::Seconds(1)) {
      SendHeldSummary();
    }
    SampleMemory(program.pid(), now);
    for (OutputBudget* budget : {&log_budget_, &step_budget_}) {
      if (std::optional<std::string> note = budget->Note(now)) Log(*note, LogLine::WARNING);
    }
    if (!busy || now - events_sent_at >= kBusyEventsEvery) {
      (void)events_->Flush();
      events_sent_at = now;
    }
    // Not while stopping or draining an ended program: neither may wait on the pauses.
    if (!stop_sent_ && exited_at == absl::InfiniteFuture()) absl::SleepFor(pause);
  }
  const absl::Time end = absl::Now();
  stdout_lines_.Finish(
      [&](absl::string_view line) { HandleLine(ProgramProcess::Stream::kStdout, line, end); });
  stderr_lines_.Finish(
      [&](absl::string_view line) { HandleLine(ProgramProcess::Stream::kStderr, line, end); });
  SendHeldSummary();
  for (OutputBudget* budget : {&log_budget_, &step_budget_}) {
    if (std::optional<std::string> note = budget->Note(absl::Now(), /*force=*/true)) {
      Log(*note, LogLine::WARNING);
    }
  }
  (void)events_->Flush();
  hold_events_ = false;
}

void ScriptRun::HandleOutput(const ProgramProcess::Output& output, absl::Time now) {
  if (output_log_fd_ >= 0 && output_log_bytes_ < kOutputLogBytes) {
    const size_t room = static_cast<size_t>(kOutputLogBytes - output_log_bytes_);
    const size_t size = std::min(room, output.bytes.size());
    if (write(output_log_fd_, output.bytes.data(), size) > 0) output_log_bytes_ += size;
  }
  (output.stream == ProgramProcess::Stream::kStdout ? stdout_lines_ : stderr_lines_)
      .Append(output.bytes, [&](absl::string_view line) { HandleLine(output.stream, line, now); });
}

void ScriptRun::HandleLine(ProgramProcess::Stream stream, absl::string_view line, absl::Time now) {
  if (stream == ProgramProcess::Stream::kStderr) {
    if (stderr_tail_.size() < kStderrTailLines) stderr_tail_.emplace_back();
    stderr_tail_[stderr_lines_seen_++ % kStderrTailLines].assign(line.data(), line.size());
  }
  // Bytes count as well as lines: a line of 16 KiB costs as much as 64 short ones, so a program
  // printing long lines fills the store no faster than one printing short ones.
  const double cost = std::max(1.0, static_cast<double>(line.size()) / kLogLineUnit);
  if (log_budget_.Admit(now, cost)) Log(std::string(line));
  const int64_t summaries_before = metrics_.summaries_read();
  const int64_t steps_before = metrics_.steps_read();
  // A step the budget would drop is only counted: making its event would be wasted work.
  const bool room_for_step = step_budget_.HasRoom(now);
  std::vector<JobEvent> events = metrics_.Read(
      line, room_for_step ? MetricLines::Steps::kMake : MetricLines::Steps::kCountOnly);
  // An epoch's summary is sent a line later (MetricLines holds it for its time lines): its time
  // is when its own line came.
  // The clock is read again for the moments an epoch's time is made of (rare): a program that
  // prints a whole epoch in one read of output still gets its epoch a time above zero, which
  // reports need (a sweep's samples a second and its CPU-vs-GPU speed-up come from it).
  if (metrics_.summaries_read() != summaries_before) summary_line_at_ = absl::Now();
  // The summary a step line flushes (the next epoch's first step ends the last epoch) is timed
  // before that step starts its own epoch's time.
  for (JobEvent& event : events) {
    if (event.has_step()) {
      FillMemory(event.mutable_step());
      TimeStep(event.mutable_step(), now);
    }
    if (event.has_epoch_summary()) {
      TimeEpoch(event.mutable_epoch_summary());
      ObserveEpoch(event.epoch_summary());
    }
    Send(std::move(event));
  }
  if (metrics_.steps_read() != steps_before) {
    if (metrics_.epoch() != timed_epoch_) {  // the epoch's first step line: its time starts
      timed_epoch_ = metrics_.epoch();
      epoch_started_ = absl::Now();
    }
    step_budget_.Admit(now);  // stored if made (there was room), counted as dropped if not
  }
}

std::vector<std::string> ScriptRun::StderrTail() const {
  // stderr_tail_ is full once it wraps; the oldest line is then the next one to be overwritten.
  std::vector<std::string> tail;
  const size_t oldest =
      stderr_lines_seen_ > kStderrTailLines ? stderr_lines_seen_ % kStderrTailLines : 0;
  for (size_t i = 0; i < stderr_tail_.size(); ++i) {
    tail.push_back(stderr_tail_[(oldest + i) % stderr_tail_.size()]);
  }
  return tail;
}

void ScriptRun::SendHeldSummary() {
  for (JobEvent& event : metrics_.Finish()) {
    if (event.has_epoch_summary()) {
      TimeEpoch(event.mutable_epoch_summary());
      ObserveEpoch(event.epoch_summary());
    }
    Send(std::move(event));
  }
}

void ScriptRun::TimeStep(trainer::v1::StepMetrics* step, absl::Time now) {
  const int64_t steps = metrics_.steps_read();
  if (last_step_made_steps_ > 0 && steps > last_step_made_steps_ && now > last_step_made_at_) {
    const double seconds =
        absl::ToDoubleSeconds(now - last_step_made_at_) / (steps - last_step_made_steps_);
    step->set_step_seconds(seconds);
    if (metrics_.batch_size() > 0) step->set_samples_per_second(metrics_.batch_size() / seconds);
  }
  last_step_made_at_ = now;
  last_step_made_steps_ = steps;
}

void ScriptRun::TimeEpoch(trainer::v1::EpochSummary* epoch) {
  // Where the program prints no epoch time (most do not), the time from the epoch's first step
  // line to its summary line, or from the last summary (or the start) for an epoch that printed
  // no step: what the report's time per epoch and speedups are computed from.
  if (epoch->epoch_seconds_no_eval() <= 0) {
    const absl::Time from = timed_epoch_ == epoch->epoch() ? epoch_started_ : last_summary_;
    epoch->set_epoch_seconds_no_eval(std::max(0.0, absl::ToDoubleSeconds(summary_line_at_ - from)));
  }
  last_summary_ = summary_line_at_;
  timed_epoch_ = 0;
}

void ScriptRun::ObserveEpoch(const trainer::v1::EpochSummary& epoch) {
  const double target = request_.spec().stop_at_accuracy();
  if (target > 0 && epoch.evaluated() && epoch.validation_accuracy() >= target &&
      stopped_reason_.empty()) {
    stopped_reason_ = absl::StrFormat("reached validation accuracy %.4f >= %g",
                                      epoch.validation_accuracy(), target);
    stopped_epoch_ = epoch.epoch();
    Log(absl::StrCat("Stopping the program after epoch ", epoch.epoch(), ": ", stopped_reason_));
  }
}

void ScriptRun::SampleMemory(pid_t pid, absl::Time now) {
  if (now < next_memory_sample_) return;
  next_memory_sample_ = now + absl::Seconds(1);
  const std::string status = absl::StrCat("/proc/", pid, "/status");
  // The program's own resident memory (its DataLoader workers are processes of their own).
  const int64_t rss = ProcKilobytes(status.c_str(), "VmRSS");
  if (rss > 0) current_rss_ = rss;
  peak_rss_ = std::max(peak_rss_, ProcKilobytes(status.c_str(), "VmHWM"));
  if (gpu_memory_ != nullptr) {
    // The program is its session's leader (ProgramProcess starts it with setsid): it and the
    // workers it started hold the GPU memory between them.
    current_driver_ = gpu_memory_->UsedBySession(pid);
    peak_driver_ = std::max(peak_driver_, current_driver_);
  }
}

void ScriptRun::FillMemory(trainer::v1::StepMetrics* step) const {
  if (step->has_current_allocated_bytes() || step->has_driver_allocated_bytes()) return;  // its own
  if (peak_driver_ > 0) {
    // A CUDA job's memory is the GPU's: what the driver holds for it (its CUDA context
    // included). What its caching allocator has handed out is known only inside it
    // (traind.report sends torch.cuda's numbers). Until NVML has seen the program on a GPU (or
    // where it cannot: another PID namespace), its resident memory stands in.
    step->set_driver_allocated_bytes(current_driver_);
    step->set_peak_driver_allocated_bytes(peak_driver_);
  } else if (current_rss_ > 0) {  // before the first reading (once a second) it is unknown, not 0
    step->set_current_allocated_bytes(current_rss_);
    step->set_peak_current_allocated_bytes(peak_rss_);
  }
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
  if (output_log_fd_ >= 0) close(output_log_fd_);
  KeepOutputs();
  const bool stopped_early = !stopped_reason_.empty();
  if (stop_.stop.load() && !stopped_early) {
    Log(absl::StrCat("The program was stopped (", exit.Describe(), ")"));
    return kWorkerStopped;
  }
  if (exit.exit_code != 0 && !stopped_early) {
    std::string why = absl::StrCat("The program ended with ", exit.Describe());
    if (!limits_.empty()) {
      absl::StrAppend(&why, " (", limits_, ")");
    }
    if (!stderr_tail_.empty()) {
      const std::vector<std::string> tail = StderrTail();
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
  *result = metrics_.result();
  const double wall = absl::ToDoubleSeconds(absl::Now() - started_);
  if (result->total_seconds() == 0) result->set_total_seconds(wall);
  if (result->total_training_seconds() == 0) result->set_total_training_seconds(wall);
  if (peak_driver_ > 0) {
    result->set_peak_driver_allocated_bytes(
        std::max(result->peak_driver_allocated_bytes(), peak_driver_));
  } else {
    result->set_peak_current_allocated_bytes(
        std::max(result->peak_current_allocated_bytes(), peak_rss_));
  }
  if (stopped_early) {
    result->mutable_stopped()->set_reason(stopped_reason_);
    result->mutable_stopped()->set_epoch(stopped_epoch_);
  }
  Send(std::move(event));
  return kWorkerSucceeded;
}

}  // namespace traind
