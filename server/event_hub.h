// EventHub: tells watchers that a job has new events. It carries no events itself — watchers read
// them from the store — so a slow watcher costs memory for nothing but its own wake-up.
// It also keeps the delivery latency figures (EventLatency) that the stages along the way record.
// Thread-safe; callbacks run on the publishing thread and must only schedule work.
#ifndef TRAIND_SERVER_EVENT_HUB_H_
#define TRAIND_SERVER_EVENT_HUB_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "server/event_latency.h"

namespace traind {

class EventHub {
 public:
  // The job's newest stored event is now `seq`.
  void Publish(int64_t job_id, int64_t seq);

  // Calls `wake` once the job has an event with seq >= `seq` — at once if it already has one
  // that was published since start. Fires at most once.
  void WaitFor(int64_t job_id, int64_t seq, std::function<void()> wake);

  EventLatency& latency() { return latency_; }

 private:
  struct Waiter {
    int64_t seq;
    std::function<void()> wake;
  };
  struct JobChannel {
    int64_t latest_seq = 0;
    std::vector<Waiter> waiters;
  };
  EventLatency latency_;
  absl::Mutex mu_;
  absl::flat_hash_map<int64_t, JobChannel> jobs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace traind

#endif  // TRAIND_SERVER_EVENT_HUB_H_
