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
#include "fuzz/spec_checks.h"
#include "trainer/v1/trainer.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  trainer::v1::JobSpec spec;
  if (traind::ParseJobFile(text, &spec).ok()) traind::CheckSpec(spec);

  trainer::v1::SweepSpec sweep;
  if (traind::ParseSweepFile(text, &sweep).ok()) traind::CheckSweep(sweep);
  return 0;
}
