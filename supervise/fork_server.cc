#include "supervise/fork_server.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "supervise/fork_protocol.h"
#include "supervise/worker_exit.h"
#include "supervise/worker_side.h"

#ifdef __linux__
#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>
#include <sys/syscall.h>
#endif

extern char** environ;

namespace traind {

namespace {

#ifdef __linux__

// The threads this process has now (entries of /proc/self/task); -1 when it cannot tell.
int ThreadCount() {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return -1;
  int count = 0;
  while (const dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(tasks);
  return count;
}

// OpenBLAS starts its thread pool when it is loaded and stops it in its own fork handler, which
// the raw clone below does not run: stop it once here. In a child it starts again on first use.
void StopLibraryThreads() {
  using Shutdown = int (*)();
  if (auto shutdown = reinterpret_cast<Shutdown>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"))) {
    shutdown();
  }
}

// fork(), except that the child's parent is this process's parent.
pid_t CloneKeepingParent() {
  return static_cast<pid_t>(
      syscall(SYS_clone, CLONE_PARENT | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
}

// In the child: what posix_spawn would have given a program traind starts (WorkerProcess::Spawn).
void BecomeTheRequestedChild(ForkRequest& request, int socket, char** argv) {
  close(socket);
  for (char** argument = argv + 1; *argument != nullptr; ++argument) {
    std::memset(*argument, 0, std::strlen(*argument));
  }
  setpgid(0, 0);  // its own process group: a Ctrl-C meant for traind does not reach it
  for (int target = 0; target < 3; ++target) dup2(request.fds[target], target);  // not CLOEXEC
  for (int fd : request.fds) {
    if (fd > 2) close(fd);
  }
  // Lives as long as the process, as an exec'd environment would (held by statics, so a leak
  // checker sees it reachable).
  static auto* strings = new std::vector<std::string>(std::move(request.environment));
  static auto* pointers = new std::vector<char*>();
  for (std::string& entry : *strings) pointers->push_back(entry.data());
  pointers->push_back(nullptr);
  environ = pointers->data();
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Forks the request's child, or says why not (-errno). Returns 0 in the child.
int ForkFor(ForkRequest& request) {
  if (const int threads = ThreadCount(); threads != 1) {
    std::fprintf(stderr, "traind-worker: the fork server has %d threads, so it cannot fork\n",
                 threads);
    return -EDEADLK;
  }
  const pid_t pid = CloneKeepingParent();
  return pid >= 0 ? pid : -errno;
}

#endif  // __linux__

void CloseAll(const ForkRequest& request) {
  for (int fd : request.fds) {
    if (fd >= 0) close(fd);
  }
}

}  // namespace

void ServeForks(int socket, char** argv) {
#ifdef __linux__
  if (!StopWithParent(SIGKILL)) _exit(kWorkerStopped);  // traind died already
  StopLibraryThreads();
  if (!SendForkAnswer(socket, 0).ok()) _exit(kWorkerStopped);  // ready
  while (true) {
    absl::StatusOr<ForkRequest> request = ReceiveForkRequest(socket);
    if (absl::IsNotFound(request.status())) _exit(kWorkerStopped);  // traind is done with it
    int answer = -EINVAL;
    if (request.ok()) {
      answer = ForkFor(*request);
      if (answer == 0) {
        BecomeTheRequestedChild(*request, socket, argv);
        return;
      }
      CloseAll(*request);  // the child's copies are its own
    } else {
      std::fprintf(stderr, "traind-worker: %s\n", std::string(request.status().message()).c_str());
    }
    if (!SendForkAnswer(socket, answer).ok()) _exit(kWorkerStopped);
  }
#else
  (void)socket;
  (void)argv;
  std::fprintf(stderr, "traind-worker: %s needs Linux\n", kForkServerFlag);
  _exit(kWorkerBadRequest);
#endif
}

}  // namespace traind
