// A command run as a child process and waited for, its output collected: argv only, never a
// shell, so nothing a user gives can become a command. Slurm's tools (sbatch, squeue, ...),
// traind's probe of bubblewrap and NVIDIA's MPS control (server/mps_control.h) run this way.
#ifndef TRAIND_COMMON_RUN_COMMAND_H_
#define TRAIND_COMMON_RUN_COMMAND_H_

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace traind {

struct CommandResult {
  int exit_code = -1;  // -1: ended by a signal
  std::string out;     // its standard output
  std::string err;     // its standard error
};
inline constexpr size_t kMaxCommandInput = 4096;

struct CommandOptions {
  absl::Duration timeout = absl::Seconds(30);
  const std::atomic<bool>* stop = nullptr;
  // "NAME=value" on top of this process's environment (common/child_environment.h).
  std::vector<std::string> environment;
  // Written to its standard input, then closed (kMaxCommandInput bytes at most: a command or
  // two); "": /dev/null.
  std::string input;
  // Its output goes to /dev/null, not collected: a program that starts a daemon which keeps its
  // parent's standard output would otherwise be waited for until the timeout.
  bool discard_output = false;
};
// Runs argv[0] (looked up on PATH) and collects its output; DEADLINE_EXCEEDED (the child killed)
// after `timeout`, CANCELLED (killed too) once `*stop` is true, NOT_FOUND when it cannot be
// started.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const CommandOptions& options);
inline absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                                absl::Duration timeout = absl::Seconds(30),
                                                const std::atomic<bool>* stop = nullptr) {
  CommandOptions options;
  options.timeout = timeout;
  options.stop = stop;
  return RunCommand(argv, options);
}

}  // namespace traind

#endif  // TRAIND_COMMON_RUN_COMMAND_H_
