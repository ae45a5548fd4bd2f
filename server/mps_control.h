// MpsControl: an NVIDIA MPS control daemon of traind's own (traind --mps auto), so that the trials
// a search packs on one GPU run their kernels side by side. Without MPS a GPU runs one process's
// kernels at a time: packed trials only fill the gaps one leaves, and on an H100 a 24-trial MLP
// search packed 13 at a time finished 2.3x sooner; through MPS, 3.1-3.3x (docs/benchmarks.md).
//
// Only a packed search's built-in trials connect (server/job_launcher.h): MPS clients of one GPU
// share one server, and a fatal fault of one ends the others' work on it, which a user accepts for
// a search's own trials, not for other jobs. Programs are not connected either: they run
// sandboxed, away from traind's state directory, where the daemon's pipes are.
//
// The daemon starts when a search on a GPU first decides how to pack (a trial measured alone),
// or a packed trial needs it, and is told to quit when traind stops; one left by a traind killed
// with SIGKILL is told to quit before the next starts, and a pipe no daemon answers on is removed.
// Where the control program is missing or fails, packed trials take turns on the GPU, as before,
// and traind's log says why once. Thread-safe; a caller waits while the daemon starts (a second).
#ifndef TRAIND_SERVER_MPS_CONTROL_H_
#define TRAIND_SERVER_MPS_CONTROL_H_

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace traind {

class MpsControl {
 public:
  struct Options {
    std::string program = "nvidia-cuda-mps-control";  // a path, or a name looked up on PATH
    // Its pipes (CUDA_MPS_PIPE_DIRECTORY) and, in log/, its log: <state-dir>/mps.
    std::string directory;
  };
  explicit MpsControl(Options options);
  ~MpsControl();  // Stop
  MpsControl(const MpsControl&) = delete;
  MpsControl& operator=(const MpsControl&) = delete;

  // What a packed trial's worker adds to its environment to connect; the daemon starts on the
  // first call. Empty when it cannot start.
  std::vector<std::string> ClientEnvironment() ABSL_LOCKS_EXCLUDED(mu_);
  // Tells a daemon it started to quit (its server ends once its clients have).
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  enum class State { kNotStarted, kRunning, kUnavailable, kStopped };
  std::vector<std::string> Environment() const;
  // Starts the daemon; false (said in traind's log) when it cannot.
  bool Start() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends `quit` to a daemon listening in the directory, if one does.
  void Quit() const;

  const Options options_;
  absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kNotStarted;
};

}  // namespace traind

#endif  // TRAIND_SERVER_MPS_CONTROL_H_
