#include "server/job_fold.h"

#include <algorithm>

#include "common/job_spec.h"

namespace traind {

using trainer::v1::Job;
using trainer::v1::JobEvent;

bool IsTerminal(Job::State state) {
  return state == Job::SUCCEEDED || state == Job::FAILED || state == Job::CANCELLED;
}

void ApplyEvent(const JobEvent& event, Job* job) {
  job->set_last_seq(event.seq());
  trainer::v1::JobResult* result = job->mutable_result();
  switch (event.kind_case()) {
    case JobEvent::kStateChange: {
      const Job::State state = event.state_change().state();
      job->set_state(state);
      if (state == Job::QUEUED && !job->has_create_time())
        *job->mutable_create_time() = event.time();
      // A re-queued job runs again (from its checkpoint, if it has one): start_time stays the
      // first start, last_start_time is the latest.
      if (state == Job::RUNNING) {
        if (!job->has_start_time()) *job->mutable_start_time() = event.time();
        *job->mutable_last_start_time() = event.time();
        job->set_runs(job->runs() + 1);
      }
      if (IsTerminal(state)) *job->mutable_end_time() = event.time();
      if (state == Job::FAILED || state == Job::CANCELLED) {
        result->set_error(event.state_change().reason());
      }
      break;
    }
    case JobEvent::kStep:
      *job->mutable_latest_step() = event.step();
      result->set_peak_current_allocated_bytes(std::max(
          result->peak_current_allocated_bytes(), event.step().peak_current_allocated_bytes()));
      result->set_peak_driver_allocated_bytes(std::max(result->peak_driver_allocated_bytes(),
                                                       event.step().peak_driver_allocated_bytes()));
      break;
    case JobEvent::kEpochSummary: {
      // Indexed by epoch: a job that resumes or starts over rewrites its epochs, never
      // appends duplicates. No job has more than kMaxEpochs: a larger epoch comes from a broken
      // worker and would make the row gigabytes (2^31 - 1: 16 GiB), so it is not recorded.
      const int epoch = event.epoch_summary().epoch();
      if (epoch > 0 && epoch <= kMaxEpochs) {
        auto* times = result->mutable_epoch_seconds_no_eval();
        while (times->size() < epoch) times->Add(0);
        times->Set(epoch - 1, event.epoch_summary().epoch_seconds_no_eval());
      }
    }
      result->set_best_validation_accuracy(event.epoch_summary().best_validation_accuracy());
      result->set_best_epoch(event.epoch_summary().best_epoch());
      break;
    case JobEvent::kCancelRequested:
      job->set_cancel_requested(true);
      break;
    case JobEvent::kProfile:
      *result->mutable_top_operators() = event.profile().top_operators();
      result->set_trace_path(event.profile().trace_path());
      *result->mutable_top_kernels() = event.profile().top_kernels();
      result->set_profile_kernel_seconds(event.profile().kernel_seconds());
      result->set_profile_steps(event.profile().steps());
      break;
    case JobEvent::kBench:
      *result->mutable_bench() = event.bench();
      break;
    case JobEvent::kEvaluation:
      *result->mutable_evaluation() = event.evaluation();
      result->set_test_accuracy(event.evaluation().accuracy());
      result->set_test_loss(event.evaluation().loss());
      break;
    case JobEvent::kArtifact: {  // a newer file of the same name replaces the older
      auto* artifacts = result->mutable_artifacts();
      auto same = std::find_if(artifacts->begin(), artifacts->end(),
                               [&](const auto& a) { return a.name() == event.artifact().name(); });
      *(same != artifacts->end() ? &*same : artifacts->Add()) = event.artifact();
      break;
    }
    case JobEvent::kFinalResult: {
      const auto& final_result = event.final_result();
      result->set_batch_size(final_result.batch_size());
      // A program that printed no test accuracy has none (not 0).
      if (final_result.has_test_accuracy()) result->set_test_accuracy(final_result.test_accuracy());
      if (final_result.has_test_loss()) result->set_test_loss(final_result.test_loss());
      if (final_result.has_stopped()) *result->mutable_stopped() = final_result.stopped();
      result->set_train_seconds(final_result.total_training_seconds());
      result->set_total_seconds(final_result.total_seconds());
      result->set_peak_current_allocated_bytes(std::max(
          result->peak_current_allocated_bytes(), final_result.peak_current_allocated_bytes()));
      result->set_peak_driver_allocated_bytes(std::max(result->peak_driver_allocated_bytes(),
                                                       final_result.peak_driver_allocated_bytes()));
      break;
    }
    default:
      break;
  }
}

}  // namespace traind
