// How `trainctl watch` shows a job's events: a live progress bar on a terminal, the reference
// scripts' lines otherwise, or one JSON JobEvent per line. Single-threaded.
#ifndef TRAIND_CLIENT_RENDER_EVENT_RENDERER_H_
#define TRAIND_CLIENT_RENDER_EVENT_RENDERER_H_

#include <memory>
#include <ostream>

#include "trainer/v1/trainer.pb.h"

namespace traind {

class EventRenderer {
 public:
  virtual ~EventRenderer() = default;
  virtual void OnEvent(const trainer::v1::JobEvent& event) = 0;
  // A note outside the event stream (e.g. "reconnecting").
  virtual void OnNote(const std::string& note) = 0;
  virtual void Close() {}
};

enum class RenderMode { kProgressBar, kPlain, kJson };

// `program_output`: the job is a user's program (JobSpec.script), whose own lines are its log:
// the step, epoch and result events read from them are not printed again as lines (the progress
// bar still follows the steps).
std::unique_ptr<EventRenderer> MakeEventRenderer(RenderMode mode, int64_t job_id, std::ostream& out,
                                                 std::ostream& err, bool program_output = false);

// Whether `event` restates a line of a program's output (a step, an epoch's summary, the result).
bool EchoesProgramOutput(const trainer::v1::JobEvent& event);

// The progress line for a StepMetrics (exposed for tests), `width` columns at most.
std::string ProgressLine(const trainer::v1::StepMetrics& step, int width);

}  // namespace traind

#endif  // TRAIND_CLIENT_RENDER_EVENT_RENDERER_H_
