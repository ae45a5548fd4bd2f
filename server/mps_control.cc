#include "server/mps_control.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log_priority.h"
#include "common/run_command.h"

namespace traind {

namespace {

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

}  // namespace

MpsControl::MpsControl(Options options) : options_(std::move(options)) {}

MpsControl::~MpsControl() { Stop(); }

std::vector<std::string> MpsControl::Environment() const {
  return {"CUDA_MPS_PIPE_DIRECTORY=" + options_.directory,
          "CUDA_MPS_LOG_DIRECTORY=" + options_.directory + "/log"};
}

std::vector<std::string> MpsControl::ClientEnvironment() {
  absl::MutexLock lock(&mu_);
  if (state_ == State::kNotStarted) state_ = Start() ? State::kRunning : State::kUnavailable;
  if (state_ != State::kRunning) return {};
  return Environment();
}

void MpsControl::Quit() const {
  const std::string control = options_.directory + "/control";
  if (!Exists(control)) return;
  CommandOptions quit;
  quit.environment = Environment();
  quit.input = "quit\n";
  quit.timeout = absl::Seconds(10);
  absl::StatusOr<CommandResult> quitted = RunCommand({options_.program}, quit);
  if (!quitted.ok() || quitted->exit_code != 0) {
    // No daemon answered: its pipe outlived it (the state directory survives a reboot).
    unlink(control.c_str());
    return;
  }
  // The daemon removes its pipe as it ends; the next one cannot listen there before.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (Exists(options_.directory + "/control") && absl::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool MpsControl::Start() {
  auto unavailable = [](const std::string& why) {
    LogAt(LogPriority::kWarning) << "traind: no MPS (" << why
                                 << "): trials packed on a GPU take turns on it\n";
    return false;
  };
  // A daemon the machine runs for everyone (its default pipes, or those traind's environment
  // names) already has every CUDA process, traind's workers too, run through it.
  const char* named = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string system = named != nullptr && *named ? named : "/tmp/nvidia-mps";
  if (Exists(system + "/control")) {
    LogAt(LogPriority::kInfo) << "traind: an MPS control daemon listens in " << system
                              << ": traind's workers run through it, and a search packs its GPU "
                                 "trials by the time their kernels run, as if they took turns\n";
    return false;
  }
  for (const std::string& directory : {options_.directory, options_.directory + "/log"}) {
    if (mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) {
      return unavailable(absl::StrCat("cannot create ", directory, ": ", strerror(errno)));
    }
  }
  Quit();  // one a traind killed with SIGKILL left
  CommandOptions start;
  start.environment = Environment();
  start.discard_output = true;  // the daemon it forks would hold our pipes
  start.timeout = absl::Seconds(10);
  absl::StatusOr<CommandResult> started = RunCommand({options_.program, "-d"}, start);
  if (!started.ok()) return unavailable(std::string(started.status().message()));
  if (started->exit_code != 0) {
    return unavailable(absl::StrCat(options_.program, " -d exited with ", started->exit_code,
                                    "; its log is in ", options_.directory, "/log"));
  }
  LogAt(LogPriority::kInfo) << "traind: MPS control daemon started (" << options_.directory
                            << "): a search's trials packed on a GPU run side by side\n";
  return true;
}

void MpsControl::Stop() {
  absl::MutexLock lock(&mu_);
  if (state_ == State::kRunning) Quit();
  state_ = State::kStopped;
}

}  // namespace traind
