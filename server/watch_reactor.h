// WatchReactor: one per WatchJob call. Streams a job's events from `from_seq` on, reading them from
// the store in batches on the executor and waiting on the hub when it has caught up, so a slow
// client holds at most one batch in memory and never blocks anyone else. One write in flight;
// Finish once, after the terminal StateChange (or on error / client cancel).
// All decisions happen in Pump(), which runs on the executor and never concurrently with itself;
// gRPC reactions only record what happened and schedule a pump. Deletes itself after OnDone once
// no pump or hub wake-up refers to it.
#ifndef TRAIND_SERVER_WATCH_REACTOR_H_
#define TRAIND_SERVER_WATCH_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <deque>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/access_control.h"
#include "server/event_hub.h"
#include "server/executor.h"
#include "server/store.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class WatchReactor : public grpc::ServerWriteReactor<trainer::v1::JobEvent> {
 public:
  static constexpr int kBatch = 256;

  // Decides, from the stored job, whether the caller may watch it (its owner).
  using Admit = std::function<absl::Status(const trainer::v1::Job&)>;

  // Starts streaming; returns the reactor gRPC should own. `lease` (may be null) is the caller's
  // watch slot, given back when the reactor is gone. `admit` (may be empty) runs on the executor
  // before the first event is read; its error ends the stream.
  static WatchReactor* Start(Store* store, EventHub* hub, Executor* executor, int64_t job_id,
                             int64_t from_seq,
                             std::unique_ptr<AccessControl::WatchLease> lease = nullptr,
                             Admit admit = nullptr);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  WatchReactor(Store* store, EventHub* hub, Executor* executor, int64_t job_id, int64_t from_seq);
  void SchedulePump();
  void Pump();
  // The first time: whether `admit_` lets the caller watch (inside Pump only).
  absl::Status AdmitOnce();
  void Unref();
  // A step event this watcher waited for (see live_from_seq_).
  bool IsLive(const trainer::v1::JobEvent& event) const;

  Store* const store_;
  EventHub* const hub_;
  Executor* const executor_;
  const int64_t job_id_;
  std::unique_ptr<AccessControl::WatchLease> lease_;
  Admit admit_;  // cleared once passed

  absl::Mutex mu_;
  int refs_ ABSL_GUARDED_BY(mu_) = 1;  // gRPC's, until OnDone
  bool pump_scheduled_ ABSL_GUARDED_BY(mu_) = false;
  bool pump_again_ ABSL_GUARDED_BY(mu_) = false;
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // Touched only inside Pump (serialised by pump_scheduled_).
  int64_t next_seq_;
  std::deque<trainer::v1::JobEvent> pending_;
  trainer::v1::JobEvent writing_;
  bool finished_ = false;
  bool saw_terminal_ = false;
  // The first seq this watcher waited for: from it on, events are live deliveries (counted in
  // the hub's latency figures); before it, backlog. 0 until it first waits.
  int64_t live_from_seq_ = 0;
  bool writing_live_step_ = false;  // set before StartWrite, read in OnWriteDone
};

}  // namespace traind

#endif  // TRAIND_SERVER_WATCH_REACTOR_H_
