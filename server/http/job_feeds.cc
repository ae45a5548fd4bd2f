#include "server/http/job_feeds.h"

#include "absl/strings/str_cat.h"

namespace traind {

JobFeed::JobFeed(RpcGateway* gateway, int64_t job_id) {
  trainer::v1::WatchJobRequest request;
  request.set_id(job_id);
  request.set_from_seq(1);
  bridge_ = WatchBridge::Start(gateway->stub(),
                               gateway->ContextFor(HttpIdentity{true, "", "local", true}), request);
  pump_ = std::thread([this] { Pump(); });
}

JobFeed::~JobFeed() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  bridge_->Stop();  // the pump's next Take returns at once
  pump_.join();
}

void JobFeed::Pump() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    trainer::v1::JobEvent event;
    grpc::Status status;
    const WatchBridge::Next next = bridge_->Take(&event, &status, absl::Seconds(1));
    if (next == WatchBridge::kTimeout) continue;
    absl::MutexLock lock(&mu_);
    if (next == WatchBridge::kEvent && event.seq() == static_cast<int64_t>(chunks_.size()) + 1 &&
        chunks_.size() < kMaxEvents) {
      chunks_.push_back(
          absl::StrCat("id: ", event.seq(), "\ndata: ", RpcGateway::ToJson(event), "\n\n"));
      continue;
    }
    if (next == WatchBridge::kEvent) {
      status = chunks_.size() >= kMaxEvents
                   ? grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                  "this job has too many events to follow in a browser; "
                                  "use trainctl watch or the export")
                   : grpc::Status(
                         grpc::StatusCode::INTERNAL,
                         absl::StrCat("event ", event.seq(), " arrived after ", chunks_.size()));
    }
    end_chunk_ = absl::StrCat("event: end\ndata: ", RpcGateway::ErrorJson(status), "\n\n");
    ended_ = true;
    failed_ = !status.ok();
    return;
  }
}

JobFeed::Next JobFeed::Take(size_t index, std::string* chunk, absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  auto ready = [this, index]()
                   ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return index < chunks_.size() || ended_; };
  mu_.AwaitWithTimeout(absl::Condition(&ready), wait);
  if (index < chunks_.size()) {
    *chunk = chunks_[index];
    return kChunk;
  }
  if (ended_) {
    *chunk = end_chunk_;
    return kEnd;
  }
  return kTimeout;
}

bool JobFeed::Failed() {
  absl::MutexLock lock(&mu_);
  return failed_;
}

std::shared_ptr<JobFeed> JobFeeds::Attach(int64_t job_id) {
  absl::MutexLock lock(&mu_);
  // Forget feeds whose last tab left (their memory went with them).
  for (auto it = feeds_.begin(); it != feeds_.end();) {
    if (it->second.expired()) {
      it = feeds_.erase(it);
    } else {
      ++it;
    }
  }
  std::shared_ptr<JobFeed> feed = feeds_[job_id].lock();
  if (feed == nullptr || feed->Failed()) {  // a failed one stays with the tabs that saw it end
    feed = std::make_shared<JobFeed>(gateway_, job_id);
    feeds_[job_id] = feed;
  }
  return feed;
}

}  // namespace traind
