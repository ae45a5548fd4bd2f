#include "supervise/worker_side.h"

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <signal.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cstdlib>

#include "absl/strings/numbers.h"

namespace traind {

namespace {

StopFlags g_flags;  // lock-free atomics: safe to set from a signal handler
void OnStop(int) { g_flags.stop.store(true); }
void OnSuspend(int) {
  g_flags.suspend.store(true);
  g_flags.stop.store(true);  // for work that cannot checkpoint: stop all the same
}

}  // namespace

int TakeStdoutForEvents() {
  const int events_fd = dup(STDOUT_FILENO);
  dup2(STDERR_FILENO, STDOUT_FILENO);
  return events_fd;
}

bool StopWithParent(int signal) {
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, signal);
#else
  (void)signal;
#endif
  const char* parent = std::getenv("TRAIND_PARENT_PID");
  pid_t expected = 0;
  if (parent == nullptr || !absl::SimpleAtoi(parent, &expected)) return true;
  return getppid() == expected;
}

StopFlags& InstallStopSignals() {
  struct sigaction stop {};
  stop.sa_handler = OnStop;
  sigaction(SIGTERM, &stop, nullptr);
  sigaction(SIGINT, &stop, nullptr);
  struct sigaction suspend {};
  suspend.sa_handler = OnSuspend;
  sigaction(SIGUSR1, &suspend, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return g_flags;
}

RequestRead ReadWorkerRequest(trainer::v1::WorkerRequest* request) {
  google::protobuf::io::FileInputStream in(STDIN_FILENO);
  bool clean_eof = false;
  if (google::protobuf::util::ParseDelimitedFromZeroCopyStream(request, &in, &clean_eof)) {
    return RequestRead::kRead;
  }
  return clean_eof ? RequestRead::kClosed : RequestRead::kUnreadable;
}

}  // namespace traind
