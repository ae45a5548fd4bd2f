// ProgramProcess: a user's program (traind-script's child): started in a session and process group
// of its own, in its working directory, with its stdin on /dev/null and its stdout and stderr on
// pipes read here. Whatever it starts in its group is signalled with it (SignalGroup), and the
// group is killed when the program ends; it dies with traind-script (PR_SET_PDEATHSIG), so a
// killed runner cannot leave the program training. A child that leaves the group on purpose
// (setsid, setpgid) escapes both: docs/security.md says so. Not thread-safe: one thread drives it.
#ifndef TRAIND_SCRIPT_PROGRAM_PROCESS_H_
#define TRAIND_SCRIPT_PROGRAM_PROCESS_H_

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace traind {

// `bytes` for `resource` (RLIMIT_DATA, RLIMIT_FSIZE) as ProgramProcess can set it: no more than
// the hard limit this process runs under, which only a privileged process could raise. 0 or
// less (no limit) as it is.
int64_t AttainableLimit(int resource, int64_t bytes);

class ProgramProcess {
 public:
  struct Options {
    std::string path;                      // the executable (an interpreter), absolute
    std::vector<std::string> argv;         // argv[0] included
    std::vector<std::string> environment;  // the whole environment, "NAME=value"
    std::string working_dir;
    int nice = 0;  // added to the program's nice value (traind's workers run below traind)
    // setrlimit before exec, for the program and each process it starts (each on its own):
    // RLIMIT_DATA and RLIMIT_FSIZE when above 0 (WorkerRequest.program_limits), each at most
    // AttainableLimit's. RLIMIT_CORE is always 0: a crashing program leaves no core file (its
    // size unbounded) in its working copy.
    int64_t memory_bytes = 0;
    int64_t file_size_bytes = 0;
    // A command the program runs under (script/sandbox.h's bubblewrap, ending in "--"): exec'd
    // in its place, with `path` and argv[1...] after it. Such a wrapper reports a program killed
    // by signal N as exit code 128+N, which Wait() reads back as the signal.
    std::vector<std::string> wrapper;
  };
  // FAILED_PRECONDITION when the program cannot be executed (missing, not executable), with
  // the system's reason.
  static absl::StatusOr<std::unique_ptr<ProgramProcess>> Start(const Options& options);
  ~ProgramProcess();  // kills the group and reaps the program

  enum class Stream { kStdout, kStderr };
  struct Output {
    Stream stream;
    std::string bytes;
    // The read took at least half of what the stream's pipe holds: the program may have been
    // waiting on a full pipe. (Half: the kernel keeps a pipe's bytes in page-sized slots, and
    // writes that do not end on a page leave slack, so a pipe can block its writer well short of
    // its capacity.)
    bool pipe_nearly_full = false;
  };
  // Waits up to `timeout` for output on either stream and appends what has arrived: all of it,
  // up to what the stream's pipe holds. False once both streams are closed (the program, and
  // everything it started that held them, has ended).
  bool Read(absl::Duration timeout, std::vector<Output>* output);
  // What a stream's pipe holds: 1 MiB where the system allows it, else what it gave (as little as
  // a page for a user past pipe-user-pages-soft).
  size_t pipe_capacity(Stream stream) const { return capacity_[stream == Stream::kStdout ? 0 : 1]; }

  // The program's process group: the program and what it started there.
  void SignalGroup(int signal);

  struct Exit {
    int exit_code = -1;            // when it exited
    int signal = 0;                // when a signal ended it
    std::string Describe() const;  // "exit code 1" / "signal 9 (Killed)"
  };
  // Whether the program itself has ended (without reaping it). Its output may still be open in
  // children it left behind.
  bool HasExited();
  // Waits for the program to end, kills what is left of its group (children it left behind),
  // then reaps it.
  Exit Wait();

  pid_t pid() const { return pid_; }

 private:
  ProgramProcess(pid_t pid, bool wrapped, int stdout_fd, int stderr_fd, size_t stdout_capacity,
                 size_t stderr_capacity)
      : pid_(pid),
        wrapped_(wrapped),
        fds_{stdout_fd, stderr_fd},
        capacity_{stdout_capacity, stderr_capacity},
        buffer_(std::max(stdout_capacity, stderr_capacity)) {}
  const pid_t pid_;
  const bool wrapped_;  // Options.wrapper
  int fds_[2];          // stdout, stderr; -1 once closed
  const size_t capacity_[2];
  std::vector<char> buffer_;  // the larger pipe's worth, so that one read empties either
  bool reaped_ = false;
};

}  // namespace traind

#endif  // TRAIND_SCRIPT_PROGRAM_PROCESS_H_
