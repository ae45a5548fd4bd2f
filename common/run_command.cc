#include "common/run_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/child_environment.h"
#include "common/status_macros.h"

namespace traind {

namespace {

// Closes both ends it holds on destruction.
struct Pipe {
  int fds[2] = {-1, -1};
  ~Pipe() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
};

// Starts argv with its standard output and error on `out` and `err` (or /dev/null), its input
// from `in` (or /dev/null); the pid, or why it could not start.
absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const CommandOptions& options,
                            Pipe& in, Pipe& out, Pipe& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (options.input.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  } else {
    posix_spawn_file_actions_adddup2(&actions, in.fds[0], STDIN_FILENO);
  }
  if (options.discard_output) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  } else {
    posix_spawn_file_actions_adddup2(&actions, out.fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err.fds[1], STDERR_FILENO);
  }
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const ChildEnvironment environment(options.environment);
  pid_t pid = -1;
  const int spawned =
      posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environment.envp());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return absl::NotFoundError(absl::StrCat("cannot run ", argv[0], ": ", strerror(spawned)));
  }
  return pid;
}

}  // namespace

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const CommandOptions& options) {
  if (argv.empty()) return absl::InvalidArgumentError("RunCommand: no program");
  if (options.input.size() > kMaxCommandInput) {
    return absl::InvalidArgumentError(absl::StrCat("RunCommand: input of ", options.input.size(),
                                                   " bytes; at most ", kMaxCommandInput));
  }
  // The input goes through a socket: sent without SIGPIPE (MSG_NOSIGNAL) to a child that exits
  // without reading it, and without blocking (its buffer holds far more than kMaxCommandInput).
  Pipe in, out, err;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in.fds) != 0 ||
      pipe2(out.fds, O_CLOEXEC) != 0 || pipe2(err.fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  ASSIGN_OR_RETURN(const pid_t pid, Spawn(argv, options, in, out, err));
  for (Pipe* pipe : {&in, &out, &err}) {
    // Only this side's ends stay open: the child's end of its input, and of its output.
    const int child_end = pipe == &in ? 0 : 1;
    close(pipe->fds[child_end]);
    pipe->fds[child_end] = -1;
  }
  // A child that exits without reading it makes the send fail: its exit code tells.
  if (!options.input.empty()) {
    (void)send(in.fds[1], options.input.data(), options.input.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  close(in.fds[1]);
  in.fds[1] = -1;
  if (options.discard_output) {
    close(out.fds[0]), close(err.fds[0]);
    out.fds[0] = err.fds[0] = -1;
  }
  const absl::Duration timeout = options.timeout;
  const std::atomic<bool>* stop = options.stop;

  CommandResult result;
  const absl::Time deadline = absl::Now() + timeout;
  std::array<pollfd, 2> polls = {pollfd{out.fds[0], POLLIN, 0}, pollfd{err.fds[0], POLLIN, 0}};
  std::array<std::string*, 2> sinks = {&result.out, &result.err};
  enum { kRunning, kTimedOut, kStopped } ended = kRunning;
  auto check = [&] {
    if (stop != nullptr && stop->load()) ended = kStopped;
    if (absl::Now() >= deadline) ended = kTimedOut;
    return ended == kRunning;
  };
  // Its output until it closes both pipes; a stop or the deadline is seen within 100 ms.
  while ((polls[0].fd >= 0 || polls[1].fd >= 0) && check()) {
    const int ready = poll(polls.data(), polls.size(), 100);
    if (ready < 0 && errno != EINTR) break;
    for (size_t i = 0; ready > 0 && i < polls.size(); ++i) {
      if (polls[i].fd < 0 || polls[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = read(polls[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        polls[i].fd = -1;  // closed (the Pipe closes it)
      }
    }
  }
  // Reaped whatever happens, but never waited for past the deadline: a child that closed its
  // pipes and went on running is killed too.
  int status = 0;
  while (true) {
    if (ended != kRunning) kill(pid, SIGKILL);
    const pid_t reaped = waitpid(pid, &status, ended == kRunning ? WNOHANG : 0);
    if (reaped == pid || (reaped < 0 && errno != EINTR)) break;
    if (reaped == 0 && check()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (ended == kTimedOut) {
    return absl::DeadlineExceededError(
        absl::StrCat(argv[0], " did not finish within ", absl::FormatDuration(timeout)));
  }
  if (ended == kStopped) return absl::CancelledError(absl::StrCat(argv[0], " stopped"));
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace traind
