#include "server/http/watch_bridge.h"

namespace traind {

std::unique_ptr<WatchBridge> WatchBridge::Start(trainer::v1::Trainer::Stub& stub,
                                                std::unique_ptr<grpc::ClientContext> context,
                                                const trainer::v1::WatchJobRequest& request) {
  std::unique_ptr<WatchBridge> bridge(new WatchBridge(std::move(context), request));
  stub.async()->WatchJob(bridge->context_.get(), &bridge->request_, bridge.get());
  {
    absl::MutexLock lock(&bridge->mu_);
    bridge->reading_ = true;
  }
  bridge->StartRead(&bridge->incoming_);
  bridge->StartCall();
  return bridge;
}

WatchBridge::~WatchBridge() { Stop(); }

void WatchBridge::OnReadDone(bool ok) {
  bool read_more = false;
  {
    absl::MutexLock lock(&mu_);
    reading_ = false;
    if (!ok) {  // the stream ended; OnDone follows with its status
      read_ended_ = true;
      return;
    }
    ready_.push_back(std::move(incoming_));
    incoming_.Clear();
    if (ready_.size() < kBuffered) read_more = reading_ = true;
  }
  if (read_more) StartRead(&incoming_);
}

void WatchBridge::OnDone(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  status_ = status;
  done_ = true;
}

WatchBridge::Next WatchBridge::Take(trainer::v1::JobEvent* event, grpc::Status* status,
                                    absl::Duration wait) {
  bool read_more = false;
  Next next;
  {
    absl::MutexLock lock(&mu_);
    auto has_news = [this]()
                        ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !ready_.empty() || done_; };
    mu_.AwaitWithTimeout(absl::Condition(&has_news), wait);
    if (!ready_.empty()) {
      *event = std::move(ready_.front());
      ready_.pop_front();
      // Reading stopped at the buffer's limit: resume once half of it is written.
      if (!reading_ && !read_ended_ && !done_ && ready_.size() < kBuffered / 2) {
        read_more = reading_ = true;
      }
      next = kEvent;
    } else if (done_) {
      *status = status_;
      next = kEnd;
    } else {
      next = kTimeout;
    }
  }
  if (read_more) StartRead(&incoming_);
  return next;
}

void WatchBridge::Stop() {
  context_->TryCancel();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&done_));
}

}  // namespace traind
