// What a job's supervisor makes of the events its ranks send, wherever they run (the scheduler's
// local ranks, traind-slurm's tasks, traind-hosts' ranks here and on peers): the one rule for all
// three. Not thread-safe: the caller's lock guards it.
#ifndef TRAIND_SUPERVISE_RANK_EVENTS_H_
#define TRAIND_SUPERVISE_RANK_EVENTS_H_

#include <string>

#include "common/event_values.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class RankEvents {
 public:
  // Whether to pass `event` on: state changes are the daemon's to decide (false). Drops its
  // impossible values (common/event_values.h: 150% accuracy, a negative time). Notes a result
  // (rank 0's final result or benchmark), and names the rank in an error's text with `who`
  // ("rank 1: ", "rank 1 (b): "; "" for a job of one rank), keeping the first error.
  bool Accept(trainer::v1::JobEvent* event, const std::string& who) {
    if (event->has_state_change()) return false;
    DropImpossibleValues(event);
    BoundEventSize(event);
    if (event->has_final_result() || event->has_bench()) got_result_ = true;
    if (event->has_log() && event->log().severity() == trainer::v1::LogLine::ERROR) {
      if (!who.empty()) event->mutable_log()->set_text(who + event->log().text());
      if (first_error_.empty()) first_error_ = event->log().text();
    }
    return true;
  }

  bool got_result() const { return got_result_; }
  // The first error a rank reported (with its `who`), or "".
  const std::string& first_error() const { return first_error_; }

 private:
  bool got_result_ = false;
  std::string first_error_;
};

}  // namespace traind

#endif  // TRAIND_SUPERVISE_RANK_EVENTS_H_
