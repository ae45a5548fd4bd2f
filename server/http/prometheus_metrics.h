// PrometheusMetrics: traind's state as Prometheus' text format, computed when /metrics is read
// (nothing is counted on the training path). Base units, bounded labels:
//   traind_jobs{state}                       jobs in each state
//   traind_queue_depth, traind_queue_paused  queued jobs; 1 while the queue is paused
//   traind_device_memory_bytes{device,kind}  kind: current | driver | peak_current | peak_driver,
//                                            summed over the device's running jobs' latest steps
//   traind_device_total_memory_bytes{device} as traind-worker found it at start (CUDA)
//   traind_job_samples_per_second{job,device,model}, traind_job_step_seconds{...}
//                                            one series per running job (at most the slots)
//   traind_worker_crashes_total              workers that died without reporting an error
//   traind_store_bytes{file}                 the SQLite file and its write-ahead log
// Loss curves stay in the store (trainctl export, /api/v1/jobs/ID/export), not here.
#ifndef TRAIND_SERVER_HTTP_PROMETHEUS_METRICS_H_
#define TRAIND_SERVER_HTTP_PROMETHEUS_METRICS_H_

#include <string>

#include "absl/status/statusor.h"
#include "server/event_latency.h"
#include "server/scheduler.h"
#include "server/store.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class PrometheusMetrics {
 public:
  // `latency`: the event hub's (server/event_latency.h); null: none exported.
  PrometheusMetrics(Store* store, Scheduler* scheduler, trainer::v1::ListDevicesResponse devices,
                    std::string state_dir, const EventLatency* latency = nullptr)
      : store_(store),
        scheduler_(scheduler),
        devices_(std::move(devices)),
        state_dir_(std::move(state_dir)),
        latency_(latency) {}

  // The exposition text (Content-Type: text/plain; version=0.0.4).
  absl::StatusOr<std::string> Render() const;

 private:
  Store* const store_;
  Scheduler* const scheduler_;
  const trainer::v1::ListDevicesResponse devices_;
  const std::string state_dir_;
  const EventLatency* const latency_;
};

}  // namespace traind

#endif  // TRAIND_SERVER_HTTP_PROMETHEUS_METRICS_H_
