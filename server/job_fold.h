// A job's row is a fold of its events: this applies one event to the Job it belongs to (state,
// timestamps, result). Pure; the store calls it inside the transaction that appends the event,
// so the row and the event log can never disagree.
#ifndef TRAIND_SERVER_JOB_FOLD_H_
#define TRAIND_SERVER_JOB_FOLD_H_

#include "trainer/v1/trainer.pb.h"

namespace traind {

void ApplyEvent(const trainer::v1::JobEvent& event, trainer::v1::Job* job);

bool IsTerminal(trainer::v1::Job::State state);

}  // namespace traind

#endif  // TRAIND_SERVER_JOB_FOLD_H_
