// What no honest job reports, kept out of the store: an accuracy outside 0..1, a negative or
// non-finite time, negative memory, a program's own metrics past their bounds. A worker, a
// program's runner and a peer's ranks all send events, and a program prints what it likes
// ("acc 150" reads as 150%): the supervisor passes every event through here before storing it, so
// `show`, `list`, reports and the dashboard never show 150% or -3 s. A value dropped is absent
// (StepMetrics' and EpochSummary's optional fields) or 0 (the fields where 0 means unknown).
// Pure functions.
#ifndef TRAIND_COMMON_EVENT_VALUES_H_
#define TRAIND_COMMON_EVENT_VALUES_H_

#include "trainer/v1/trainer.pb.h"

namespace traind {

inline constexpr size_t kMaxEventMetrics = 16;     // names in one event's `metrics`
inline constexpr size_t kMaxEventMetricName = 48;  // characters in each name
// An evaluation's confusion matrix is kept for at most this many classes (10,000 counts, at most
// ~100 KB); beyond, its per-class accuracy and samples are (Evaluation.classes of them, at most
// data/dataset.h's kMaxClasses), the matrix is not: 2,043 classes made a 4.2 MB job that no
// client with gRPC's default 4 MiB limit could read.
inline constexpr size_t kMaxConfusionClasses = 100;
// The largest event stored whole; a larger one is replaced by a warning that says what it was
// (only a broken or hostile worker sends one: every field above is bounded well below it).
inline constexpr size_t kMaxEventBytes = 1 << 20;

// Drops `event`'s impossible values (above); returns how many it dropped.
int DropImpossibleValues(trainer::v1::JobEvent* event);

// Keeps `event` within the bounds above: a confusion matrix of more than kMaxConfusionClasses
// classes (or not classes x classes) is dropped; an event still larger than kMaxEventBytes
// becomes a WARNING log line naming its kind and size. True when it changed the event.
bool BoundEventSize(trainer::v1::JobEvent* event);

}  // namespace traind

#endif  // TRAIND_COMMON_EVENT_VALUES_H_
