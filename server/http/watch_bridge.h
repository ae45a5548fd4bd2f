// WatchBridge: one WatchJob stream, read by gRPC's callback API and handed to a thread that waits
// with a timeout (JobFeed's pump, which renders each event once for every tab on the job), so the
// thread can look up between events (shutdown, a stopped feed) instead of blocking in a read.
// At most kBuffered events wait here; past that the bridge stops reading until the taker catches
// up, and further back the service's watch reactor simply waits (as for a slow gRPC watcher).
//   auto bridge = WatchBridge::Start(stub, std::move(context), request);
//   while (bridge->Take(&event, &status, absl::Seconds(1)) != WatchBridge::kEnd) ...
//   bridge->Stop();  // cancels if still open; waits for gRPC's last reaction
#ifndef TRAIND_SERVER_HTTP_WATCH_BRIDGE_H_
#define TRAIND_SERVER_HTTP_WATCH_BRIDGE_H_

#include <grpcpp/grpcpp.h>

#include <deque>
#include <memory>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "trainer/v1/trainer.grpc.pb.h"

namespace traind {

class WatchBridge : public grpc::ClientReadReactor<trainer::v1::JobEvent> {
 public:
  static constexpr size_t kBuffered = 256;
  enum Next { kEvent, kEnd, kTimeout };

  static std::unique_ptr<WatchBridge> Start(trainer::v1::Trainer::Stub& stub,
                                            std::unique_ptr<grpc::ClientContext> context,
                                            const trainer::v1::WatchJobRequest& request);
  ~WatchBridge() override;  // Stop()

  // The next event (kEvent), the stream's end with its status (kEnd), or kTimeout after `wait`.
  Next Take(trainer::v1::JobEvent* event, grpc::Status* status, absl::Duration wait);
  // Cancels the stream if it is still open and waits until gRPC is done with this object.
  void Stop();

  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  WatchBridge(std::unique_ptr<grpc::ClientContext> context,
              const trainer::v1::WatchJobRequest& request)
      : context_(std::move(context)), request_(request) {}

  std::unique_ptr<grpc::ClientContext> context_;
  const trainer::v1::WatchJobRequest request_;
  trainer::v1::JobEvent incoming_;  // gRPC's while a read is outstanding
  absl::Mutex mu_;
  std::deque<trainer::v1::JobEvent> ready_ ABSL_GUARDED_BY(mu_);
  bool reading_ ABSL_GUARDED_BY(mu_) = false;     // a read is outstanding
  bool read_ended_ ABSL_GUARDED_BY(mu_) = false;  // a read failed: the stream has no more
  bool done_ ABSL_GUARDED_BY(mu_) = false;        // OnDone ran: status_ is final
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace traind

#endif  // TRAIND_SERVER_HTTP_WATCH_BRIDGE_H_
