#include "supervise/fork_server.h"

#include <signal.h>
#include <unistd.h>

#include <array>
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
#include <fcntl.h>
#include <pthread.h>
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

// Where glibc keeps this thread's kernel id in its thread descriptor (struct pthread, at
// pthread_self()): after the TCB header (704 bytes on x86_64, 24 pointers elsewhere) and a list
// node of two pointers (glibc's nptl/descr.h). glibc's own fork has the kernel write the child's
// id there (CLONE_CHILD_SETTID); the clone below does the same, so that the child's recursive
// mutexes (ld.so's lock among them) and pthread_* calls on itself name the child, not this
// server. Null where the int there is not this thread's id (another C library or layout).
pid_t* GlibcThreadIdSlot() {
#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__))
#if defined(__x86_64__)
  constexpr size_t kHeader = 704;
#else
  constexpr size_t kHeader = 24 * sizeof(void*);
#endif
  auto* slot = reinterpret_cast<pid_t*>(reinterpret_cast<char*>(pthread_self()) + kHeader +
                                        2 * sizeof(void*));
  return *slot == static_cast<pid_t>(syscall(SYS_gettid)) ? slot : nullptr;
#else
  return nullptr;
#endif
}

// fork(), except that the child's parent is this process's parent; the kernel writes the child's
// thread id into `id_slot` in the child.
pid_t CloneKeepingParent(pid_t* id_slot) {
  const unsigned long flags = CLONE_PARENT | CLONE_CHILD_SETTID | SIGCHLD;
#if defined(__x86_64__)
  return static_cast<pid_t>(syscall(SYS_clone, flags, nullptr, nullptr, id_slot, nullptr));
#elif defined(__aarch64__)
  return static_cast<pid_t>(syscall(SYS_clone, flags, nullptr, nullptr, nullptr, id_slot));
#else
  (void)flags;
  (void)id_slot;
  errno = ENOSYS;
  return -1;
#endif
}

// `fds` onto 0, 1 and 2 (inheritable), whichever numbers they have now (a received one may
// itself be 1 or 2 when traind runs with those closed); the originals closed.
void BecomeStdio(const std::array<int, 3>& fds) {
  std::array<int, 3> moved{};
  for (int i = 0; i < 3; ++i) {
    moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
    close(fds[i]);
  }
  for (int target = 0; target < 3; ++target) dup2(moved[target], target);  // clears CLOEXEC
  for (int fd : moved) close(fd);
}

// In the child: what posix_spawn would have given a program traind starts (WorkerProcess::Spawn).
void BecomeTheRequestedChild(ForkRequest& request, int socket, char** argv) {
  close(socket);
  for (char** argument = argv + 1; *argument != nullptr; ++argument) {
    std::memset(*argument, 0, std::strlen(*argument));
  }
  setpgid(0, 0);  // its own process group: a Ctrl-C meant for traind does not reach it
  BecomeStdio(request.fds);
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
int ForkFor(pid_t* id_slot) {
  if (const int threads = ThreadCount(); threads != 1) {
    std::fprintf(stderr, "traind-worker: the fork server has %d threads, so it cannot fork\n",
                 threads);
    return -EDEADLK;
  }
  const pid_t pid = CloneKeepingParent(id_slot);
  return pid >= 0 ? pid : -errno;
}

// Stops the library threads and waits (up to about 2 s) until the kernel has let them go: a
// joined thread stays listed in /proc/self/task a moment longer. False if more remain.
bool BecomeSingleThreaded() {
  StopLibraryThreads();
  for (int tries = 0; tries < 2000; ++tries) {
    if (ThreadCount() == 1) return true;
    usleep(1000);
  }
  return false;
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
  pid_t* const id_slot = GlibcThreadIdSlot();
  if (id_slot == nullptr || !BecomeSingleThreaded()) {
    // traind sees the socket close without a "ready", and starts workers as programs.
    std::fprintf(stderr, "traind-worker: cannot serve forks: %s\n",
                 id_slot == nullptr ? "glibc's thread id is not where this build expects it"
                                    : "library threads remain");
    _exit(kWorkerStopped);
  }
  if (!SendForkAnswer(socket, 0).ok()) _exit(kWorkerStopped);  // ready
  while (true) {
    absl::StatusOr<ForkRequest> request = ReceiveForkRequest(socket);
    if (absl::IsNotFound(request.status())) _exit(kWorkerStopped);  // traind is done with it
    int answer = -EINVAL;
    if (request.ok()) {
      answer = ForkFor(id_slot);
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
