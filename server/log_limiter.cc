#include "server/log_limiter.h"

#include "absl/strings/str_cat.h"

namespace traind {

LogLimiter::LogLimiter(Options options, std::ostream* out, std::function<absl::Time()> now)
    : options_(std::move(options)), out_(out), now_(std::move(now)) {}

void LogLimiter::Log(const std::string& line) {
  const absl::Time now = now_();
  absl::MutexLock lock(&mu_);
  if (now - window_start_ >= options_.window) {
    if (left_out_ > 0) {
      *out_ << "traind: " << left_out_ << " more " << options_.what << " not shown (at most "
            << options_.burst << " every " << absl::FormatDuration(options_.window) << ")\n";
    }
    window_start_ = now;
    written_ = 0;
    left_out_ = 0;
  }
  if (written_ >= options_.burst) {
    ++left_out_;
    return;
  }
  ++written_;
  *out_ << line << "\n";
  out_->flush();
}

}  // namespace traind
