#include "server/watch_reactor.h"

#include <algorithm>

#include "common/grpc_status.h"
#include "server/job_fold.h"

namespace traind {

using trainer::v1::Job;
using trainer::v1::JobEvent;

WatchReactor* WatchReactor::Start(Store* store, EventHub* hub, Executor* executor, int64_t job_id,
                                  int64_t from_seq,
                                  std::unique_ptr<AccessControl::WatchLease> lease, Admit admit) {
  auto* reactor = new WatchReactor(store, hub, executor, job_id, from_seq);
  reactor->lease_ = std::move(lease);
  reactor->admit_ = std::move(admit);
  reactor->SchedulePump();
  return reactor;
}

WatchReactor::WatchReactor(Store* store, EventHub* hub, Executor* executor, int64_t job_id,
                           int64_t from_seq)
    : store_(store),
      hub_(hub),
      executor_(executor),
      job_id_(job_id),
      next_seq_(std::max<int64_t>(from_seq, 1)) {}

void WatchReactor::SchedulePump() {
  absl::MutexLock lock(&mu_);
  if (pump_scheduled_) {
    pump_again_ = true;
    return;
  }
  pump_scheduled_ = true;
  ++refs_;
  executor_->Schedule([this] {
    Pump();
    Unref();
  });
}

void WatchReactor::OnWriteDone(bool ok) {
  if (ok && writing_live_step_) hub_->latency().Record(EventLatency::kWriteDone, writing_.time());
  {
    absl::MutexLock lock(&mu_);
    write_in_flight_ = false;
    if (!ok) write_failed_ = true;
  }
  SchedulePump();
}

void WatchReactor::OnCancel() {
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
  }
  SchedulePump();
}

void WatchReactor::OnDone() { Unref(); }

void WatchReactor::Unref() {
  bool last;
  {
    absl::MutexLock lock(&mu_);
    last = --refs_ == 0;
  }
  if (last) delete this;
}

absl::Status WatchReactor::AdmitOnce() {
  if (!admit_) return absl::OkStatus();
  Admit admit = std::move(admit_);
  admit_ = nullptr;
  absl::StatusOr<Job> job = store_->GetJob(job_id_);
  return job.ok() ? admit(*job) : job.status();
}

bool WatchReactor::IsLive(const JobEvent& event) const {
  return event.has_step() && live_from_seq_ > 0 && event.seq() >= live_from_seq_;
}

void WatchReactor::Pump() {
  while (true) {
    bool cancelled, write_failed, in_flight;
    {
      absl::MutexLock lock(&mu_);
      pump_again_ = false;
      cancelled = cancelled_;
      write_failed = write_failed_;
      in_flight = write_in_flight_;
    }
    grpc::Status finish_with;
    bool finish = false, start_write = false, wait = false;
    if (finished_ || in_flight) {
      // Nothing to do until the write completes (or ever, once finished).
    } else if (cancelled || write_failed) {
      finish = true;
      finish_with = grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled");
    } else if (absl::Status admitted = AdmitOnce(); !admitted.ok()) {
      finish = true;
      finish_with = ToGrpcStatus(admitted);
    } else if (!pending_.empty()) {
      start_write = true;
    } else if (saw_terminal_) {
      finish = true;
    } else {
      absl::StatusOr<std::vector<JobEvent>> events = store_->ReadEvents(job_id_, next_seq_, kBatch);
      if (events.ok() && events->empty()) {
        // Nothing new: either the job is over (from_seq past its end) or we wait for more.
        absl::StatusOr<Job> job = store_->GetJob(job_id_);
        if (!job.ok()) {
          finish = true;
          finish_with = ToGrpcStatus(job.status());
        } else if (IsTerminal(job->state()) && job->last_seq() < next_seq_) {
          finish = true;
        } else {
          wait = true;
        }
      } else if (!events.ok()) {
        finish = true;
        finish_with = ToGrpcStatus(events.status());
      } else {
        for (JobEvent& event : *events) {
          next_seq_ = event.seq() + 1;
          if (IsLive(event)) hub_->latency().Record(EventLatency::kWatcherRead, event.time());
          if (event.has_state_change() && IsTerminal(event.state_change().state())) {
            saw_terminal_ = true;
          }
          pending_.push_back(std::move(event));
        }
        start_write = true;
      }
    }

    if (finish) {
      finished_ = true;
      Finish(finish_with);
    } else if (start_write) {
      writing_ = std::move(pending_.front());
      pending_.pop_front();
      writing_live_step_ = IsLive(writing_);
      {
        absl::MutexLock lock(&mu_);
        write_in_flight_ = true;
      }
      StartWrite(&writing_);
    } else if (wait) {
      if (live_from_seq_ == 0) live_from_seq_ = next_seq_;
      // The hub fires at once if the event we missed was published meanwhile.
      {
        absl::MutexLock lock(&mu_);
        ++refs_;
      }
      hub_->WaitFor(job_id_, next_seq_, [this] {
        SchedulePump();
        Unref();
      });
    }

    absl::MutexLock lock(&mu_);
    if (!pump_again_) {
      pump_scheduled_ = false;
      return;
    }
  }
}

}  // namespace traind
