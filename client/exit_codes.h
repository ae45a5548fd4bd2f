// trainctl's exit codes: the contract scripts rely on (docs/cli.md).
#ifndef TRAIND_CLIENT_EXIT_CODES_H_
#define TRAIND_CLIENT_EXIT_CODES_H_

namespace traind {

inline constexpr int kExitOk = 0;           // for `watch`: the job succeeded
inline constexpr int kExitJobFailed = 1;    // the job failed or was cancelled; other errors
inline constexpr int kExitUsage = 2;        // bad usage or an invalid request
inline constexpr int kExitUnreachable = 3;  // daemon unreachable or not authorised
inline constexpr int kExitTimedOut = 4;     // `wait --timeout` passed before the jobs ended

}  // namespace traind

#endif  // TRAIND_CLIENT_EXIT_CODES_H_
