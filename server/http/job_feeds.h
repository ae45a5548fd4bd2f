// JobFeeds: one WatchJob stream per watched job, shared by every browser tab that shows it. Each
// event is read from the store once and rendered as a Server-Sent Event once, however many tabs
// follow the job; with 50 tabs open that was the difference between training slowed by 7% and by
// under 2% on two cores (docs/benchmarks-history.md, "Dashboard load").
// A tab is admitted by the service first (DashboardServer asks GetJob as that tab's caller); the
// feed itself reads as the daemon's own user. A feed keeps the job's events from seq 1 in memory
// while any tab follows it (a step event is about 390 bytes of JSON), so a tab may start anywhere,
// and stops when the last tab leaves.
//   std::shared_ptr<JobFeed> feed = feeds.Attach(job_id);
//   feed->Take(from_seq - 1, &chunk, absl::Seconds(1));  // the chunk of seq from_seq
// Thread-safe.
#ifndef TRAIND_SERVER_HTTP_JOB_FEEDS_H_
#define TRAIND_SERVER_HTTP_JOB_FEEDS_H_

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/http/rpc_gateway.h"
#include "server/http/watch_bridge.h"

namespace traind {

class JobFeed {
 public:
  // More events than this and the feed ends its tabs' streams (RESOURCE_EXHAUSTED, naming trainctl
  // watch and the export): about 16-20 MB of rendered events (320 bytes each on average over an
  // MLP job's stream, 390 for a step event). A 100-epoch run logging every 10 of 470 batches has
  // about 5,000.
  static constexpr size_t kMaxEvents = 50000;
  enum Next { kChunk, kEnd, kTimeout };

  JobFeed(RpcGateway* gateway, int64_t job_id);
  ~JobFeed();  // stops reading and joins its thread

  // The SSE chunk of event number `index` (seq index + 1): kChunk; once the stream ended and every
  // event was taken, its closing chunk (`event: end`): kEnd; else kTimeout after `wait`.
  Next Take(size_t index, std::string* chunk, absl::Duration wait);
  // The stream ended with an error (refused, cancelled at shutdown, too long): not for new tabs.
  bool Failed();

 private:
  void Pump();

  std::unique_ptr<WatchBridge> bridge_;
  absl::Mutex mu_;
  std::vector<std::string> chunks_ ABSL_GUARDED_BY(mu_);
  std::string end_chunk_ ABSL_GUARDED_BY(mu_);  // set when the stream ended
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;  // ended_ with a status other than OK
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread pump_;
};

class JobFeeds {
 public:
  explicit JobFeeds(RpcGateway* gateway) : gateway_(gateway) {}
  // The job's feed, shared with the tabs already following it, or a new one.
  std::shared_ptr<JobFeed> Attach(int64_t job_id);

 private:
  RpcGateway* const gateway_;
  absl::Mutex mu_;
  std::map<int64_t, std::weak_ptr<JobFeed>> feeds_ ABSL_GUARDED_BY(mu_);
};

}  // namespace traind

#endif  // TRAIND_SERVER_HTTP_JOB_FEEDS_H_
