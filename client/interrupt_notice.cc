#include "client/interrupt_notice.h"

#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace traind {

namespace {

// The text the handler writes: a fixed buffer, since it may not allocate.
char notice_text[512];
size_t notice_size = 0;

void PrintNoticeAndExit(int signal_number) {
  size_t written = 0;
  while (written < notice_size) {
    const ssize_t n = write(STDERR_FILENO, notice_text + written, notice_size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  _exit(128 + signal_number);
}

void Install(int signal_number, struct sigaction* previous) {
  struct sigaction action {};
  action.sa_handler = PrintNoticeAndExit;
  sigemptyset(&action.sa_mask);
  sigaction(signal_number, &action, previous);
}

}  // namespace

InterruptNotice::InterruptNotice(const std::string& notice, bool after_progress_bar) {
  const std::string text = absl::StrCat(after_progress_bar ? "\n" : "", "trainctl: ", notice, "\n");
  notice_size = std::min(text.size(), sizeof(notice_text));
  std::memcpy(notice_text, text.data(), notice_size);
  Install(SIGINT, &previous_int_);
  Install(SIGTERM, &previous_term_);
  Install(SIGHUP, &previous_hup_);
}

InterruptNotice::~InterruptNotice() {
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
  sigaction(SIGHUP, &previous_hup_, nullptr);
}

std::string JobKeepsRunning(int64_t job_id) {
  return absl::StrCat("stopped following; job ", job_id, " keeps running: `trainctl watch ", job_id,
                      "` follows it again, `trainctl cancel ", job_id, "` stops it");
}

std::string SweepKeepsRunning(int64_t sweep_id) {
  return absl::StrCat("stopped following; sweep ", sweep_id,
                      "'s jobs keep running: `trainctl watch --sweep ", sweep_id,
                      "` follows them again, `trainctl cancel --sweep ", sweep_id, "` stops them");
}

}  // namespace traind
