// A job's time limit (JobSpec.time_limit, `--time`) in Slurm's format, which traind enforces for
// its own jobs too: a program that hangs must not hold the queue all night. Pure functions.
#ifndef TRAIND_COMMON_TIME_LIMIT_H_
#define TRAIND_COMMON_TIME_LIMIT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace traind {

// "30" (minutes), "30:00" (MM:SS), "2:00:00" (H:MM:SS), "1-00" (D-HH), "1-00:30" (D-HH:MM),
// "1-00:30:00" (D-HH:MM:SS), as sbatch --time reads them. INVALID_ARGUMENT naming time_limit
// for anything else, for 0 (Slurm's "no limit" is not offered) and beyond 365 days.
absl::StatusOr<absl::Duration> ParseTimeLimit(const std::string& text);

}  // namespace traind

#endif  // TRAIND_COMMON_TIME_LIMIT_H_
