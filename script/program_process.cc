#include "script/program_process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/errno_status.h"

namespace traind {

namespace {

void CloseBoth(int fds[2]) {
  close(fds[0]);
  close(fds[1]);
}

std::vector<char*> Pointers(const std::vector<std::string>& words) {
  std::vector<char*> pointers;
  for (const std::string& word : words) pointers.push_back(const_cast<char*>(word.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

// In the child: tells the parent errno on `report` and exits.
[[noreturn]] void FailInChild(int report) {
  const int error = errno;
  (void)!write(report, &error, sizeof(error));
  _exit(127);
}

// In the child: the soft and the hard limit alike, so that an unprivileged program cannot raise
// it again (one with CAP_SYS_RESOURCE, root's, can). `bytes` is at most the hard limit this
// process runs under (AttainableLimit), so lowering it cannot be refused. getrlimit and setrlimit
// are plain system calls in glibc, as nice and prctl above; POSIX does not list them as
// async-signal-safe.
bool SetHardLimit(int resource, int64_t bytes) {
  const rlimit limit{static_cast<rlim_t>(bytes), static_cast<rlim_t>(bytes)};
  return setrlimit(resource, &limit) == 0;
}

// In the child, between fork and exec: async-signal-safe calls only. Reports errno on `report`
// and exits if anything fails.
[[noreturn]] void BecomeProgram(const ProgramProcess::Options& options, const char* path,
                                char* const* argv, char* const* envp, int out, int err, int report,
                                pid_t parent) {
  auto fail = [report] { FailInChild(report); };
  // Its own session: a terminal's signals and traind's group's do not reach it, and its group
  // is everything it starts that does not leave on purpose.
  if (setsid() < 0) fail();
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail();
  if (getppid() != parent) _exit(127);  // the runner died before PDEATHSIG was set
  const int null = open("/dev/null", O_RDONLY);
  if (null < 0 || dup2(null, STDIN_FILENO) < 0) fail();
  if (dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0) fail();
  // Nothing else of the runner's crosses exec: not its event pipe to traind (a program writing
  // there would forge events; one left running would hold it open).
  syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // The runner ignores SIGPIPE; an ignored signal stays ignored across exec.
  for (int signal : {SIGPIPE, SIGTERM, SIGINT, SIGUSR1, SIGHUP}) ::signal(signal, SIG_DFL);
  if (chdir(options.working_dir.c_str()) != 0) fail();
  if (options.nice > 0) (void)!nice(options.nice);
  (void)SetHardLimit(RLIMIT_CORE, 0);  // best effort: no job fails for want of it
  if (options.memory_bytes > 0 && !SetHardLimit(RLIMIT_DATA, options.memory_bytes)) fail();
  if (options.file_size_bytes > 0 && !SetHardLimit(RLIMIT_FSIZE, options.file_size_bytes)) fail();
  execve(path, argv, envp);
  FailInChild(report);
}

}  // namespace

int64_t AttainableLimit(int resource, int64_t bytes) {
  rlimit limit{};
  if (bytes <= 0 || getrlimit(resource, &limit) != 0 || limit.rlim_max == RLIM_INFINITY) {
    return bytes;
  }
  return std::min<int64_t>(bytes, static_cast<int64_t>(limit.rlim_max));
}

absl::StatusOr<std::unique_ptr<ProgramProcess>> ProgramProcess::Start(const Options& options) {
  int out[2], err[2], report[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Errno("pipe");
  if (pipe2(err, O_CLOEXEC) != 0) {
    CloseBoth(out);
    return Errno("pipe");
  }
  if (pipe2(report, O_CLOEXEC) != 0) {
    CloseBoth(out), CloseBoth(err);
    return Errno("pipe");
  }
  // Room for a burst of output while the runner is busy: the program's writes do not block (and
  // do not wake the runner for every line) until a megabyte waits. Best effort: the system's
  // pipe-max-size may refuse it.
  size_t capacity[2];
  for (int i = 0; i < 2; ++i) {
    const int fd = i == 0 ? out[1] : err[1];
    fcntl(fd, F_SETPIPE_SZ, 1 << 20);
    const int size = fcntl(fd, F_GETPIPE_SZ);
    capacity[i] = size > 0 ? static_cast<size_t>(size) : 4096;
  }
  // Built before fork: the child may only make async-signal-safe calls.
  std::vector<std::string> words = options.argv;
  const std::string& path = options.wrapper.empty() ? options.path : options.wrapper[0];
  if (!options.wrapper.empty()) {
    words = options.wrapper;
    words.push_back(options.path);
    words.insert(words.end(), options.argv.begin() + std::min<size_t>(1, options.argv.size()),
                 options.argv.end());
  }
  const std::vector<char*> argv = Pointers(words);
  const std::vector<char*> envp = Pointers(options.environment);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    CloseBoth(out), CloseBoth(err), CloseBoth(report);
    return Errno("fork");
  }
  if (pid == 0) {
    BecomeProgram(options, path.c_str(), argv.data(), envp.data(), out[1], err[1], report[1],
                  parent);
  }
  close(out[1]), close(err[1]), close(report[1]);
  int error = 0;
  ssize_t got;
  do {
    got = read(report[0], &error, sizeof(error));  // EOF: exec closed it (CLOEXEC)
  } while (got < 0 && errno == EINTR);
  close(report[0]);
  if (got == sizeof(error)) {
    waitpid(pid, nullptr, 0);
    close(out[0]), close(err[0]);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run ", path, " in ", options.working_dir, ": ", std::strerror(error)));
  }
  return std::unique_ptr<ProgramProcess>(
      new ProgramProcess(pid, !options.wrapper.empty(), out[0], err[0], capacity[0], capacity[1]));
}

ProgramProcess::~ProgramProcess() {
  if (!reaped_) {
    SignalGroup(SIGKILL);
    Wait();
  }
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

bool ProgramProcess::Read(absl::Duration timeout, std::vector<Output>* output) {
  pollfd polled[2];
  int count = 0;
  Stream streams[2];
  for (int i = 0; i < 2; ++i) {
    if (fds_[i] < 0) continue;
    polled[count] = {fds_[i], POLLIN, 0};
    streams[count++] = i == 0 ? Stream::kStdout : Stream::kStderr;
  }
  if (count == 0) return false;
  const int64_t ms = absl::ToInt64Milliseconds(timeout);
  const int wait_ms = timeout == absl::InfiniteDuration() ? -1
                      : ms > 1 << 30                      ? 1 << 30
                                                          : static_cast<int>(ms);
  if (poll(polled, count, wait_ms) <= 0) return true;  // a timeout, or EINTR (a stop signal)
  for (int i = 0; i < count; ++i) {
    if (polled[i].revents == 0) continue;
    const ssize_t n = read(polled[i].fd, buffer_.data(), buffer_.size());
    if (n > 0) {
      const bool nearly_full = static_cast<size_t>(n) >= pipe_capacity(streams[i]) / 2;
      output->push_back({streams[i], std::string(buffer_.data(), n), nearly_full});
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      int& fd = fds_[streams[i] == Stream::kStdout ? 0 : 1];
      close(fd);
      fd = -1;
    }
  }
  return fds_[0] >= 0 || fds_[1] >= 0;
}

void ProgramProcess::SignalGroup(int signal) {
  if (!reaped_) kill(-pid_, signal);  // the group keeps its id while the leader is unreaped
}

bool ProgramProcess::HasExited() {
  if (reaped_) return true;
  siginfo_t info = {};
  return waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_;
}

ProgramProcess::Exit ProgramProcess::Wait() {
  Exit exit;
  if (reaped_) return exit;
  // Ended, but not reaped yet: its pid, the group's id, cannot be reused while children it left
  // in its group (a DataLoader's workers, a forked server) are killed with it.
  siginfo_t info = {};
  while (waitid(P_PID, pid_, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  kill(-pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  if (WIFEXITED(status)) exit.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) exit.signal = WTERMSIG(status);
  // bubblewrap's 128+N for a program signal N ended (as a shell reports it); a program that
  // exits with 129..192 itself reads as a signal too, which is rare and said as the shell says it.
  if (wrapped_ && exit.exit_code > 128 && exit.exit_code <= 128 + 64) {
    exit.signal = exit.exit_code - 128;
    exit.exit_code = -1;
  }
  return exit;
}

std::string ProgramProcess::Exit::Describe() const {
  if (signal != 0) return absl::StrCat("signal ", signal, " (", strsignal(signal), ")");
  return absl::StrCat("exit code ", exit_code);
}

}  // namespace traind
