#include "supervise/rank_group.h"

#include <utility>

#include "supervise/worker_exit.h"

namespace traind {

RankGroup::RankGroup(std::vector<std::unique_ptr<WorkerProcess>> ranks)
    : ranks_(std::move(ranks)), exits_(ranks_.size()), alive_(static_cast<int>(ranks_.size())) {}

void RankGroup::PumpRound(const Callbacks& callbacks, absl::Duration wait) {
  bool waited = false;
  for (int r = 0; r < size(); ++r) {
    if (exits_[r].has_value()) continue;
    int passed = 0;
    WorkerProcess::ReadResult read = WorkerProcess::ReadResult::kTimeout;
    while (passed < kMaxBurst) {
      trainer::v1::JobEvent event;
      read = ranks_[r]->ReadEvent(&event, waited ? absl::ZeroDuration() : wait);
      waited = true;
      if (read != WorkerProcess::ReadResult::kEvent) break;
      callbacks.on_event(r, std::move(event));
      ++passed;
    }
    if (passed > 0 && callbacks.on_burst_end) callbacks.on_burst_end(r);
    if (read == WorkerProcess::ReadResult::kEnd) Reap(r, callbacks);
  }
}

void RankGroup::Reap(int r, const Callbacks& callbacks) {
  if (callbacks.on_events_ended) callbacks.on_events_ended(r, /*last=*/alive_ == 1);
  exits_[r] = ranks_[r]->Wait();
  --alive_;
  if (!exits_[r]->clean() && failed_rank_ < 0) {
    failed_rank_ = r;
    const bool stopped_as_asked =
        stopping_ && exits_[r]->signal == 0 && exits_[r]->exit_code == kWorkerStopped;
    if (!stopped_as_asked) KillAll();
  }
  if (callbacks.on_exit) callbacks.on_exit(r, *exits_[r]);
}

std::unique_ptr<WorkerProcess> RankGroup::TakeIdle(int r) {
  if (!exits_[r].has_value() || ranks_[r] == nullptr || !ranks_[r]->idle() ||
      ranks_[r]->signalled()) {
    return nullptr;
  }
  return std::move(ranks_[r]);
}

void RankGroup::TerminateAll() {
  stopping_ = true;
  for (int r = 0; r < size(); ++r) {
    if (!exits_[r].has_value()) ranks_[r]->Terminate();
  }
}

void RankGroup::SuspendAll() {
  stopping_ = true;
  for (int r = 0; r < size(); ++r) {
    if (!exits_[r].has_value()) ranks_[r]->Suspend();
  }
}

void RankGroup::KillAll() {
  for (int r = 0; r < size(); ++r) {
    if (!exits_[r].has_value()) ranks_[r]->Kill();
  }
}

}  // namespace traind
