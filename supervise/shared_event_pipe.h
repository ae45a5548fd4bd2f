// SharedEventPipe: a launcher's one event stream to traind (its stdout, read by traind as a
// worker's), for the launchers that stand for a job's ranks elsewhere (traind-slurm,
// traind-hosts): written by the launcher's own thread (its log lines) and by the threads that
// relay the ranks' events:
// one message at a time, so two writers cannot interleave bytes and corrupt the stream.
// Thread-safe.
#ifndef TRAIND_SUPERVISE_SHARED_EVENT_PIPE_H_
#define TRAIND_SUPERVISE_SHARED_EVENT_PIPE_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "supervise/event_pipe.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class SharedEventPipe {
 public:
  explicit SharedEventPipe(int fd) : pipe_(fd) {}

  // False once traind's end is gone.
  bool Write(const trainer::v1::JobEvent& event) {
    absl::MutexLock lock(&mu_);
    return pipe_.Write(event);
  }
  bool Log(const std::string& text,
           trainer::v1::LogLine::Severity severity = trainer::v1::LogLine::INFO) {
    trainer::v1::JobEvent event;
    event.mutable_log()->set_severity(severity);
    event.mutable_log()->set_text(text);
    return Write(event);
  }

 private:
  absl::Mutex mu_;
  EventPipeWriter pipe_ ABSL_GUARDED_BY(mu_);
};

}  // namespace traind

#endif  // TRAIND_SUPERVISE_SHARED_EVENT_PIPE_H_
