// What the daemon does with a submitted spec before a job exists, for the fuzz targets that reach
// it (job_file, request): defaults and validation of a job, expansion of a sweep and validation
// of its members. Any input must end in a Status.
#ifndef TRAIND_FUZZ_SPEC_CHECKS_H_
#define TRAIND_FUZZ_SPEC_CHECKS_H_

#include <algorithm>
#include <cstddef>

#include "common/job_spec.h"
#include "server/sweep_expansion.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

inline void CheckSpec(trainer::v1::JobSpec spec) {
  ApplyDefaults(&spec);
  (void)ValidateJobSpec(spec);
}

inline void CheckSweep(const trainer::v1::SweepSpec& sweep) {
  absl::StatusOr<std::vector<trainer::v1::JobSpec>> members = ExpandSweep(sweep);
  if (!members.ok()) return;
  // Repeats are copies of the first members.size() / repeat: validating those is enough, and
  // keeps a `repeat: 10000` from slowing the fuzzer down a thousandfold.
  const size_t distinct = members->size() / std::max(1, sweep.repeat());
  for (size_t i = 0; i < distinct; ++i) CheckSpec((*members)[i]);
}

}  // namespace traind

#endif  // TRAIND_FUZZ_SPEC_CHECKS_H_
