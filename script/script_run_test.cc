// traind-script, the real binary, driven as traind drives it (WorkerProcess: the request on
// stdin, events on stdout, signals, the exit status), running real Python programs.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"
#include "supervise/worker_exit.h"
#include "supervise/worker_process.h"

namespace traind {
namespace {

using trainer::v1::JobEvent;

constexpr char kPython[] = "/usr/bin/python3";

class ScriptRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
    ASSERT_EQ(mkdir((dir_ / "uploads").c_str(), 0700), 0);
    ASSERT_EQ(mkdir((dir_ / "job").c_str(), 0700), 0);
  }

  // A file of the working directory, as an upload would hold it.
  void AddFile(const std::string& path, const std::string& content) {
    const std::string source = dir_ / ("uploads/" + std::to_string(request_.script_sources_size()));
    std::ofstream(source) << content;
    trainer::v1::ScriptSource* added = request_.add_script_sources();
    added->set_path(path);
    added->set_source(source);
  }

  // Runs `args` (after python3) to its end; the events it sent and its exit.
  WorkerProcess::Exit Run(const std::vector<std::string>& args,
                          const std::vector<std::string>& environment = {}) {
    std::unique_ptr<WorkerProcess> runner = StartRunner(args, environment);
    if (runner == nullptr) return {};
    return Collect(*runner);
  }

  std::unique_ptr<WorkerProcess> StartRunner(const std::vector<std::string>& args,
                                             const std::vector<std::string>& environment = {}) {
    request_.set_job_id(7);
    request_.set_job_dir(dir_ / "job");
    request_.set_interpreter_path(interpreter_);
    request_.mutable_spec()->set_device("cpu");
    request_.mutable_spec()->mutable_script()->clear_args();
    for (const std::string& arg : args) request_.mutable_spec()->mutable_script()->add_args(arg);
    absl::StatusOr<std::unique_ptr<WorkerProcess>> runner =
        WorkerProcess::Start(TRAIND_SCRIPT_RUNNER, request_, environment);
    EXPECT_TRUE(runner.ok()) << runner.status();
    return runner.ok() ? *std::move(runner) : nullptr;
  }

  WorkerProcess::Exit Collect(WorkerProcess& runner) {
    JobEvent event;
    while (runner.ReadEvent(&event, absl::InfiniteDuration()) ==
           WorkerProcess::ReadResult::kEvent) {
      events_.push_back(event);
    }
    return runner.Wait();
  }

  std::vector<std::string> Logs(trainer::v1::LogLine::Severity severity) const {
    std::vector<std::string> logs;
    for (const JobEvent& e : events_) {
      if (e.has_log() && e.log().severity() == severity) logs.push_back(e.log().text());
    }
    return logs;
  }
  bool Logged(const std::string& text) const {
    for (const JobEvent& e : events_) {
      if (e.has_log() && e.log().text() == text) return true;
    }
    return false;
  }
  const JobEvent* Last(JobEvent::KindCase kind) const {
    for (auto it = events_.rbegin(); it != events_.rend(); ++it) {
      if (it->kind_case() == kind) return &*it;
    }
    return nullptr;
  }
  // Waits (without a deadline: ctest's timeout is the bound) until `path` holds a line.
  static std::string AwaitFile(const std::string& path) {
    for (;;) {
      std::ifstream in(path);
      std::string line;
      if (std::getline(in, line) && !line.empty()) return line;
      usleep(10000);
    }
  }

  TempDirForTests dir_;
  std::string interpreter_ = kPython;
  trainer::v1::WorkerRequest request_;
  std::vector<JobEvent> events_;
};

TEST_F(ScriptRunTest, ASeedStyleScriptsLinesBecomeLogsMetricsAndTheResult) {
  AddFile("train.py", R"(import sys
from lib.util import epochs
for epoch in range(1, epochs + 1):
    for batch in (0, 100):
        print(f"Epoch: {epoch:03d}/{epochs:03d} | Batch {batch:04d}/0421 | Loss: {2.0 / (epoch + batch):.4f}")
    print(f"Epoch: {epoch:03d}/{epochs:03d} | Train: 9{epoch}.00% | Validation: 9{epoch}.50% | Best Validation (Ep. {epoch:03d}): 9{epoch}.50%")
print("Test accuracy 93.25%")
print("a warning", file=sys.stderr)
)");
  AddFile("lib/util.py", "epochs = 2\n");
  const WorkerProcess::Exit exit = Run({"train.py"});
  EXPECT_EQ(exit.exit_code, kWorkerSucceeded) << exit.Describe();
  EXPECT_TRUE(Logged("Test accuracy 93.25%"));
  EXPECT_TRUE(Logged("a warning"));
  int steps = 0, epochs = 0;
  for (const JobEvent& e : events_) {
    steps += e.has_step();
    epochs += e.has_epoch_summary();
  }
  EXPECT_EQ(steps, 4);
  EXPECT_EQ(epochs, 2);
  const JobEvent* epoch = Last(JobEvent::kEpochSummary);
  ASSERT_NE(epoch, nullptr);
  EXPECT_DOUBLE_EQ(epoch->epoch_summary().validation_accuracy(), 0.925);
  const JobEvent* result = Last(JobEvent::kFinalResult);
  ASSERT_NE(result, nullptr);
  EXPECT_DOUBLE_EQ(result->final_result().test_accuracy(), 0.9325);
  EXPECT_GT(result->final_result().total_seconds(), 0);
  // The whole output is kept beside the job's events.
  std::ifstream log(dir_ / "job/output.log");
  std::stringstream whole;
  whole << log.rdbuf();
  EXPECT_NE(whole.str().find("Test accuracy 93.25%"), std::string::npos);
}

TEST_F(ScriptRunTest, TheProgramSeesItsDeviceDirectoriesAndNoTraindVariables) {
  AddFile("env.py", R"(import os
for name in ("TRAIND_DEVICE", "CUDA_VISIBLE_DEVICES", "TRAIND_JOB_ID", "PYTHONUNBUFFERED", "TRAIND_STDOUT_FLUSH_MS", "OMP_NUM_THREADS"):
    print(f"{name}={os.environ.get(name)}")
print("checkpoints", os.path.isdir(os.environ["TRAIND_CHECKPOINT_DIR"]))
print("secret", "TRAIND_SECRET_FOR_TEST" in os.environ)
print("cwd", os.path.exists("env.py"))
)");
  request_.mutable_spec()->set_threads(3);
  const WorkerProcess::Exit exit = Run({"env.py"}, {"TRAIND_SECRET_FOR_TEST=hunter2"});
  EXPECT_EQ(exit.exit_code, kWorkerSucceeded) << exit.Describe();
  for (const char* expected :
       {"TRAIND_DEVICE=cpu", "CUDA_VISIBLE_DEVICES=", "TRAIND_JOB_ID=7",
        // Flushed every 50 ms by python/site's sitecustomize rather than line by line.
        "PYTHONUNBUFFERED=None", "TRAIND_STDOUT_FLUSH_MS=50", "OMP_NUM_THREADS=3",
        "checkpoints True", "secret False", "cwd True"}) {
    EXPECT_TRUE(Logged(expected)) << expected;
  }
}

TEST_F(ScriptRunTest, AFailingProgramFailsWithItsExitCodeAndTheEndOfItsStderr) {
  AddFile("fail.py", "import sys\nprint('about to fail', file=sys.stderr)\nsys.exit(3)\n");
  const WorkerProcess::Exit exit = Run({"fail.py"});
  EXPECT_EQ(exit.exit_code, kWorkerJobFailed);
  const std::vector<std::string> errors = Logs(trainer::v1::LogLine::ERROR);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(absl::StrContains(errors[0], "exit code 3")) << errors[0];
  EXPECT_TRUE(absl::StrContains(errors[0], "about to fail")) << errors[0];
  EXPECT_EQ(Last(JobEvent::kFinalResult), nullptr);
}

TEST_F(ScriptRunTest, AFailureQuotesTheLastTwentyLinesOfStderrInOrder) {
  AddFile("fail.py",
          "import sys\nfor i in range(45):\n    print(f'stderr {i}', file=sys.stderr)\n"
          "sys.exit(1)\n");
  const WorkerProcess::Exit exit = Run({"fail.py"});
  EXPECT_EQ(exit.exit_code, kWorkerJobFailed);
  const std::vector<std::string> errors = Logs(trainer::v1::LogLine::ERROR);
  ASSERT_EQ(errors.size(), 1u);
  std::string expected = "the last lines of its stderr:";
  for (int i = 25; i < 45; ++i) absl::StrAppend(&expected, "\nstderr ", i);
  EXPECT_TRUE(absl::EndsWith(errors[0], expected)) << errors[0];
}

TEST_F(ScriptRunTest, FilesTheProgramWroteToItsOutputDirectoryBecomeArtifacts) {
  AddFile("save.py", R"(import os
out = os.environ["TRAIND_OUTPUT_DIR"]
os.makedirs(os.path.join(out, "plots"))
open(os.path.join(out, "model.pt"), "wb").write(b"weights")
open(os.path.join(out, "plots", "loss.csv"), "w").write("1,2\n")
os.symlink("/etc/passwd", os.path.join(out, "passwd"))
raise SystemExit(4)  # a failed run keeps what it wrote too
)");
  EXPECT_EQ(Run({"save.py"}).exit_code, kWorkerJobFailed);
  std::vector<std::string> names;
  for (const JobEvent& e : events_) {
    if (e.has_artifact()) names.push_back(e.artifact().name());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"model.pt", "plots/loss.csv"}));
  const std::vector<std::string> warnings = Logs(trainer::v1::LogLine::WARNING);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(absl::StrContains(warnings[0], "Kept 2 files")) << warnings[0];
  EXPECT_TRUE(absl::StrContains(warnings[0], "passwd (a symbolic link)")) << warnings[0];
}

TEST_F(ScriptRunTest, AMissingScriptOrInterpreterIsAClearError) {
  AddFile("present.py", "print('hi')\n");
  EXPECT_EQ(Run({"absent.py"}).exit_code, kWorkerJobFailed);
  ASSERT_FALSE(Logs(trainer::v1::LogLine::ERROR).empty());
  EXPECT_TRUE(absl::StrContains(Logs(trainer::v1::LogLine::ERROR)[0], "exit code 2"));
  events_.clear();
  interpreter_ = dir_ / "no-such-python";
  EXPECT_EQ(Run({"present.py"}).exit_code, kWorkerJobFailed);
  const std::vector<std::string> errors = Logs(trainer::v1::LogLine::ERROR);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(absl::StrContains(errors[0], "cannot start the program")) << errors[0];
  EXPECT_TRUE(absl::StrContains(errors[0], "No such file")) << errors[0];
}

TEST_F(ScriptRunTest, ChildrenTheProgramLeftBehindAreKilled) {
  AddFile("fork.py", R"(import os, sys, time
pid = os.fork()
if pid == 0:
    time.sleep(3600)
    sys.exit(0)
with open(sys.argv[1], "w") as f:
    f.write(str(pid))
)");
  const std::string pid_file = dir_ / "child.pid";
  const WorkerProcess::Exit exit = Run({"fork.py", pid_file});
  EXPECT_EQ(exit.exit_code, kWorkerSucceeded) << exit.Describe();
  int child = 0;
  ASSERT_TRUE(absl::SimpleAtoi(AwaitFile(pid_file), &child));
  // Killed and reaped (the runner's child's child is reaped by init once killed): poll for the
  // state, not for a time.
  for (;;) {
    std::ifstream stat(absl::StrCat("/proc/", child, "/stat"));
    std::string line;
    if (!std::getline(stat, line) || absl::StrContains(line, ") Z ")) break;
    usleep(10000);
  }
}

TEST_F(ScriptRunTest, AProgramThatIgnoresSigtermIsKilledAfterTheGrace) {
  AddFile("stubborn.py", R"(import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
while True:
    time.sleep(1)
)");
  std::unique_ptr<WorkerProcess> runner =
      StartRunner({"stubborn.py"}, {"TRAIND_SCRIPT_STOP_GRACE_MS=200"});
  ASSERT_NE(runner, nullptr);
  JobEvent event;
  while (runner->ReadEvent(&event, absl::InfiniteDuration()) == WorkerProcess::ReadResult::kEvent) {
    events_.push_back(event);
    if (event.has_log() && event.log().text() == "ready") break;
  }
  runner->Terminate();
  const WorkerProcess::Exit exit = Collect(*runner);
  EXPECT_EQ(exit.exit_code, kWorkerStopped) << exit.Describe();
  EXPECT_TRUE(Logged("The program was stopped (signal 9 (Killed))"));
}

TEST_F(ScriptRunTest, StopAtAccuracyEndsTheProgramAsASuccess) {
  AddFile("slow.py", R"(import time
for epoch in (1, 2):
    print(f"Epoch: {epoch:03d}/100 | Train: 90.00% | Validation: {80 + 10 * epoch}.00% | Best Validation (Ep. {epoch:03d}): 90.00%")
print("Epoch: 003/100 | Batch 0000/0421 | Loss: 0.1")
while True:
    time.sleep(1)
)");
  request_.mutable_spec()->set_stop_at_accuracy(0.95);
  const WorkerProcess::Exit exit = Run({"slow.py"});
  EXPECT_EQ(exit.exit_code, kWorkerSucceeded) << exit.Describe();
  const JobEvent* result = Last(JobEvent::kFinalResult);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(result->final_result().stopped().epoch(), 2);
  EXPECT_TRUE(absl::StrContains(result->final_result().stopped().reason(), "1.0000 >= 0.95"))
      << result->final_result().stopped().reason();
}

// Space nobody counted: 16 KiB lines, 2,000 of them, all arrived at once. The line budget alone
// stored all 2,000 (its burst): 32 MB. A long line costs as many short ones as its 256-byte
// pieces, so at most the burst's worth of bytes (2,000 x 256) is stored at once.
TEST_F(ScriptRunTest, LongLinesCostTheirBytesInTheBudget) {
  AddFile("long.py", R"(import sys
line = "x" * 16384 + "\n"
for i in range(2000):
    sys.stdout.write(line)
)");
  const WorkerProcess::Exit exit = Run({"long.py"});
  EXPECT_EQ(exit.exit_code, kWorkerSucceeded) << exit.Describe();
  size_t stored = 0;
  for (const std::string& line : Logs(trainer::v1::LogLine::INFO)) {
    if (absl::StartsWith(line, "xxxx")) stored += line.size();
  }
  EXPECT_GT(stored, 0u);
  EXPECT_LE(stored, 2000u * 256 + 2 * 16384) << "bytes of long lines stored";
  const std::vector<std::string> warnings = Logs(trainer::v1::LogLine::WARNING);
  ASSERT_FALSE(warnings.empty());
  EXPECT_TRUE(absl::StrContains(warnings.back(), "lines of output not stored")) << warnings.back();
}

TEST_F(ScriptRunTest, AFloodIsStoredWithinItsBudgetAndSaysWhatWasDropped) {
  AddFile("flood.py", R"(import sys
sys.stdout.buffer.write(b"\x1b[31mred\x1b[0m caf\xe9 \xff\n")
sys.stdout.flush()
for i in range(200000):
    sys.stdout.write(f"line {i}\n")
)");
  const WorkerProcess::Exit exit = Run({"flood.py"});
  EXPECT_EQ(exit.exit_code, kWorkerSucceeded) << exit.Describe();
  const std::vector<std::string> info = Logs(trainer::v1::LogLine::INFO);
  EXPECT_LT(info.size(), 10000u);  // a burst of 2,000 and 50 a second
  const std::vector<std::string> warnings = Logs(trainer::v1::LogLine::WARNING);
  ASSERT_FALSE(warnings.empty());
  EXPECT_TRUE(absl::StrContains(warnings.back(), "lines of output not stored")) << warnings.back();
  // Every event decoded (WorkerProcess parses them): the invalid bytes became U+FFFD.
  EXPECT_TRUE(Logged("\x1b[31mred\x1b[0m caf\xEF\xBF\xBD \xEF\xBF\xBD"));
  std::ifstream log(dir_ / "job/output.log");
  std::stringstream whole;
  whole << log.rdbuf();
  EXPECT_NE(whole.str().find("line 199999\n"), std::string::npos);
}

// An epoch's time runs from its first step line to its summary line: the summary the next
// epoch's first step flushes keeps its own epoch's start, not the program's (what came before the
// first step, loading data, is no epoch's).
TEST_F(ScriptRunTest, AnEpochIsTimedFromItsFirstStepNotFromTheStart) {
  // Each epoch's lines in one write: they arrive in one read of output.
  AddFile("epochs.py", R"(import sys, time
time.sleep(0.5)
for epoch in (1, 2):
    sys.stdout.write(f"Epoch: {epoch:03d}/002 | Batch 0000/0001 | Loss: 0.9\n"
                     f"Epoch: {epoch:03d}/002 | Train: 90.00% | Validation: 89.00%\n")
    sys.stdout.flush()
)");
  const WorkerProcess::Exit exit = Run({"epochs.py"});
  EXPECT_EQ(exit.exit_code, kWorkerSucceeded) << exit.Describe();
  const JobEvent* result = Last(JobEvent::kFinalResult);
  ASSERT_NE(result, nullptr);
  int summaries = 0;
  for (const JobEvent& e : events_) {
    if (!e.has_epoch_summary()) continue;
    ++summaries;
    // The runner's whole time less the half second before the first step bounds every epoch's.
    EXPECT_LT(e.epoch_summary().epoch_seconds_no_eval(),
              result->final_result().total_seconds() - 0.5)
        << "epoch " << e.epoch_summary().epoch();
    // Above zero even when the epoch's lines came in one read (a sweep's speed-up and
    // samples a second need it).
    EXPECT_GT(e.epoch_summary().epoch_seconds_no_eval(), 0)
        << "epoch " << e.epoch_summary().epoch();
  }
  EXPECT_EQ(summaries, 2);
}

// The steps over the budget are only counted, never made into events; every step line is one or
// the other, and the epochs around them keep their summaries.
TEST_F(ScriptRunTest, AFloodOfStepsIsCountedExactlyAndItsEpochsStillEnd) {
  AddFile("steps.py", R"(for epoch in (1, 2):
    for i in range(20000):
        print(f"Epoch {epoch}, Batch {i}: loss {1.0 / (i + 1):.4f}")
    print(f"Epoch: {epoch:03d}/002 | Train: 90.00% | Validation: 89.00%")
print("Test accuracy 88.50%")
)");
  const WorkerProcess::Exit exit = Run({"steps.py"});
  EXPECT_EQ(exit.exit_code, kWorkerSucceeded) << exit.Describe();
  int64_t stored = 0;
  std::vector<int> summaries;
  for (const JobEvent& e : events_) {
    if (e.has_step()) ++stored;
    if (e.has_epoch_summary()) {
      summaries.push_back(e.epoch_summary().epoch());
      EXPECT_DOUBLE_EQ(e.epoch_summary().validation_accuracy(), 0.89);
    }
  }
  EXPECT_EQ(summaries, (std::vector<int>{1, 2}));
  // "traind: N step metrics not stored (...); M in all so far": the last note's M.
  int64_t dropped = -1;
  for (const std::string& warning : Logs(trainer::v1::LogLine::WARNING)) {
    absl::string_view rest = warning;
    if (!absl::ConsumePrefix(&rest, "traind: ") || !absl::StrContains(rest, "step metrics")) {
      continue;
    }
    rest = rest.substr(rest.rfind("; ") + 2);
    ASSERT_TRUE(absl::SimpleAtoi(rest.substr(0, rest.find(' ')), &dropped)) << warning;
  }
  EXPECT_GT(stored, 0);
  EXPECT_EQ(stored + dropped, 40000);
  const JobEvent* result = Last(JobEvent::kFinalResult);
  ASSERT_NE(result, nullptr);
  EXPECT_DOUBLE_EQ(result->final_result().test_accuracy(), 0.885);
}

}  // namespace
}  // namespace traind
