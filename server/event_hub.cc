#include "server/event_hub.h"

#include <algorithm>

namespace traind {

void EventHub::Publish(int64_t job_id, int64_t seq) {
  std::vector<std::function<void()>> ready;
  {
    absl::MutexLock lock(&mu_);
    JobChannel& channel = jobs_[job_id];
    channel.latest_seq = std::max(channel.latest_seq, seq);
    auto& waiters = channel.waiters;
    auto split = std::partition(waiters.begin(), waiters.end(),
                                [&](const Waiter& w) { return w.seq > channel.latest_seq; });
    for (auto it = split; it != waiters.end(); ++it) ready.push_back(std::move(it->wake));
    waiters.erase(split, waiters.end());
  }
  for (auto& wake : ready) wake();
}

void EventHub::WaitFor(int64_t job_id, int64_t seq, std::function<void()> wake) {
  {
    absl::MutexLock lock(&mu_);
    JobChannel& channel = jobs_[job_id];
    if (channel.latest_seq < seq) {
      channel.waiters.push_back(Waiter{seq, std::move(wake)});
      return;
    }
  }
  wake();
}

}  // namespace traind
