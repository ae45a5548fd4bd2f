#include "slurm/slurm_commands.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/on_path.h"

extern char** environ;

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

}  // namespace

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout, const std::atomic<bool>* stop) {
  if (argv.empty()) return absl::InvalidArgumentError("RunCommand: no program");
  Pipe out, err;
  if (pipe2(out.fds, O_CLOEXEC) != 0 || pipe2(err.fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.fds[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return absl::NotFoundError(absl::StrCat("cannot run ", argv[0], ": ", strerror(spawned)));
  }
  close(out.fds[1]);
  close(err.fds[1]);
  out.fds[1] = err.fds[1] = -1;

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

absl::StatusOr<int64_t> ParseSbatchJobId(const std::string& out) {
  absl::string_view text = absl::StripAsciiWhitespace(out);
  text = text.substr(0, text.find(';'));
  int64_t id = 0;
  if (!absl::SimpleAtoi(text, &id) || id <= 0) {
    return absl::InternalError(absl::StrCat("sbatch printed no job id: '", out, "'"));
  }
  return id;
}

namespace {

// The first line's first word, or "" when the command failed or printed nothing.
std::string FirstWord(const absl::StatusOr<CommandResult>& result) {
  if (!result.ok() || result->exit_code != 0) return "";
  absl::string_view text = absl::StripLeadingAsciiWhitespace(result->out);
  text = text.substr(0, text.find_first_of(" \n\t"));
  return std::string(absl::StripTrailingAsciiWhitespace(text));
}

}  // namespace

absl::StatusOr<std::string> SlurmJobState(int64_t job_id, const std::atomic<bool>* stop) {
  const std::string id = absl::StrCat(job_id);
  // Short: the launcher polls every few seconds and must notice a cancel meanwhile.
  const absl::Duration kQuery = absl::Seconds(10);
  // squeue knows pending and running jobs, and (--states=all) those that ended within MinJobAge.
  std::string state = FirstWord(RunCommand(
      {"squeue", "--noheader", "--states=all", "--jobs", id, "--format", "%T"}, kQuery, stop));
  if (!state.empty()) return state;
  // sacct, where the cluster keeps accounting: the allocation's own line (-X).
  if (OnPath("sacct")) {
    state = FirstWord(RunCommand(
        {"sacct", "--noheader", "-X", "--jobs", id, "--format", "State%30", "--parsable2"}, kQuery,
        stop));
    if (!state.empty()) return state;
  }
  absl::StatusOr<CommandResult> shown =
      RunCommand({"scontrol", "show", "job", id, "--oneliner"}, kQuery, stop);
  if (shown.ok() && shown->exit_code == 0) {
    const size_t at = shown->out.find("JobState=");
    if (at != std::string::npos) {
      const size_t begin = at + std::strlen("JobState=");
      return shown->out.substr(begin, shown->out.find_first_of(" \n", begin) - begin);
    }
  }
  return absl::NotFoundError(absl::StrCat("Slurm does not know job ", job_id, " (any more)"));
}

bool IsFinalSlurmState(const std::string& state) {
  static const char* const kActive[] = {
      "PENDING",      "RUNNING",     "CONFIGURING",   "COMPLETING",  "REQUEUED",
      "RESIZING",     "SUSPENDED",   "STOPPED",       "SIGNALING",   "STAGE_OUT",
      "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SPECIAL_EXIT"};
  const std::string word = state.substr(0, state.find(' '));
  if (word.empty()) return false;
  for (const char* active : kActive) {
    if (word == active) return false;
  }
  return true;
}

}  // namespace traind
