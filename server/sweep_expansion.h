// Turns a SweepSpec into its member JobSpecs: each explicit configuration (or the base alone)
// crossed with every combination of the grid's axes, repeated. Repeats are interleaved (all
// configurations once, then all again) so slow drift on the machine touches every configuration
// alike. Pure.
//
// Every number of the base, of each configuration and on each axis is held to its field's range
// (common/spec_ranges.h) here, before anything is copied; the caller still validates each member
// in full (TrainerService::CreateSweep: ApplyDefaults, ValidateJobSpec), which rules between
// fields need.
#ifndef TRAIND_SERVER_SWEEP_EXPANSION_H_
#define TRAIND_SERVER_SWEEP_EXPANSION_H_

#include <vector>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

inline constexpr int kMaxSweepMembers = 10000;
// Every member is a copy of the base (and its config): the expansion may hold at most this much.
inline constexpr int64_t kMaxSweepBytes = int64_t{64} << 20;

absl::StatusOr<std::vector<trainer::v1::JobSpec>> ExpandSweep(const trainer::v1::SweepSpec& spec);

}  // namespace traind

#endif  // TRAIND_SERVER_SWEEP_EXPANSION_H_
