// Fuzz target: the text of a job or sweep file, as `trainctl submit FILE` and `trainctl sweep FILE`
// read it, through everything that follows before a job exists: YAML -> JSON -> JobSpec /
// SweepSpec, defaults and validation (common/job_spec.cc, shared by trainctl and traind), and the
// daemon's sweep expansion (server/sweep_expansion.cc). Any input must give a Status; a crash, a
// leak, an uncaught exception or undefined behaviour is a finding.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "client/job_file.h"
#include "common/job_spec.h"
#include "server/sweep_expansion.h"
#include "trainer/v1/trainer.pb.h"

namespace {

void Check(trainer::v1::JobSpec spec) {
  traind::ApplyDefaults(&spec);
  (void)traind::ValidateJobSpec(spec);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  trainer::v1::JobSpec spec;
  if (traind::ParseJobFile(text, &spec).ok()) Check(spec);

  trainer::v1::SweepSpec sweep;
  if (traind::ParseSweepFile(text, &sweep).ok()) {
    absl::StatusOr<std::vector<trainer::v1::JobSpec>> members = traind::ExpandSweep(sweep);
    if (members.ok()) {
      // Repeats are copies of the first members.size() / repeat: validating those is enough, and
      // keeps a `repeat: 10000` from slowing the fuzzer down a thousandfold.
      const size_t distinct = members->size() / std::max(1, sweep.repeat());
      for (size_t i = 0; i < distinct; ++i) Check((*members)[i]);
    }
  }
  return 0;
}
