// EventSink: the launcher's one event stream to traind (its stdout, read by traind as a worker's),
// written by the launcher's own thread (its log lines) and by gRPC's threads (the tasks' events):
// one message at a time, so two writers cannot interleave bytes and corrupt the stream.
// Thread-safe.
#ifndef TRAIND_SLURM_EVENT_SINK_H_
#define TRAIND_SLURM_EVENT_SINK_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/event_pipe.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class EventSink {
 public:
  explicit EventSink(int fd) : pipe_(fd) {}

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

#endif  // TRAIND_SLURM_EVENT_SINK_H_
