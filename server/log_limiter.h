// LogLimiter: at most `burst` lines per `window` reach the log; the rest are counted and summed up
// in one line when the next window opens. For lines a caller can cause at will (a refused call is
// one line: 5,000 bad calls made 345 KB of log in under a second), so the log stays readable and
// its size bounded by time, not by what a caller sends. Thread-safe.
#ifndef TRAIND_SERVER_LOG_LIMITER_H_
#define TRAIND_SERVER_LOG_LIMITER_H_

#include <functional>
#include <ostream>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace traind {

class LogLimiter {
 public:
  struct Options {
    int burst = 20;  // lines written per window
    absl::Duration window = absl::Seconds(10);
    std::string what = "lines";  // in the summary: "412 more refused calls ..."
  };
  // Writes to `out` (not owned; must outlive this). `now` is the clock (tests pass their own).
  LogLimiter(
      Options options, std::ostream* out,
      std::function<absl::Time()> now = [] { return absl::Now(); });

  // Writes `line` (plus a newline) or counts it. A window with lines left out is summed up,
  // before the next line written, as "<prefix>N more <what> not shown (<window>)".
  void Log(const std::string& line);

 private:
  const Options options_;
  std::ostream* const out_;
  const std::function<absl::Time()> now_;
  absl::Mutex mu_;
  absl::Time window_start_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int written_ ABSL_GUARDED_BY(mu_) = 0;       // in this window
  int64_t left_out_ ABSL_GUARDED_BY(mu_) = 0;  // in this window
};

}  // namespace traind

#endif  // TRAIND_SERVER_LOG_LIMITER_H_
