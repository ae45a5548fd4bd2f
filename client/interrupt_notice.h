// Ctrl-C while trainctl follows a job or a sweep: the job goes on without it, and the user is told
// so and how to stop it, instead of trainctl vanishing with exit code 130 and nothing said.
// While an InterruptNotice lives, SIGINT (and SIGTERM, SIGHUP: a closed terminal) print its text
// on stderr and end the process with 128 + the signal's number, as the shell would report. Only
// async-signal-safe calls happen in the handler: the text is formatted beforehand. One at a time,
// made and destroyed on the main thread; the previous handlers come back when it is destroyed.
#ifndef TRAIND_CLIENT_INTERRUPT_NOTICE_H_
#define TRAIND_CLIENT_INTERRUPT_NOTICE_H_

#include <signal.h>

#include <string>

namespace traind {

class InterruptNotice {
 public:
  // `notice`: one line, without "trainctl: " or a newline; `after_progress_bar` starts it on a
  // line of its own (a progress bar on the terminal has none).
  InterruptNotice(const std::string& notice, bool after_progress_bar);
  ~InterruptNotice();
  InterruptNotice(const InterruptNotice&) = delete;
  InterruptNotice& operator=(const InterruptNotice&) = delete;

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
  struct sigaction previous_hup_ {};
};

// "job 12 keeps running: `trainctl watch 12` follows it again, `trainctl cancel 12` stops it".
std::string JobKeepsRunning(int64_t job_id);
// The same for every member of a sweep.
std::string SweepKeepsRunning(int64_t sweep_id);

}  // namespace traind

#endif  // TRAIND_CLIENT_INTERRUPT_NOTICE_H_
