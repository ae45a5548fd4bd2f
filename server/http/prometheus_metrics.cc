#include "server/http/prometheus_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <sys/stat.h>

#include <map>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace traind {
namespace {

using trainer::v1::Job;
using trainer::v1::StepMetrics;

int64_t FileBytes(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 ? static_cast<int64_t>(info.st_size) : 0;
}

// How long a step event took from the worker's stamp to each point of its way (received from the
// pipe, stored, read by a watcher, written to it) since traind started: p50, p99 and the largest,
// as gauges in seconds (the histogram's bucket edges), and how many events each point saw.
void AddEventLatency(const EventLatency& latency, prometheus::Registry& registry) {
  auto& seconds = prometheus::BuildGauge()
                      .Name("traind_event_latency_seconds")
                      .Help(
                          "Step events' latency from the worker's stamp to each point since "
                          "start: quantile 0.5, 0.99 and 1 (the largest)")
                      .Register(registry);
  auto& events = prometheus::BuildCounter()
                     .Name("traind_events_total")
                     .Help("Step events that reached each point since start")
                     .Register(registry);
  const std::pair<EventLatency::Point, const char*> points[] = {
      {EventLatency::kReceived, "received"},
      {EventLatency::kStored, "stored"},
      {EventLatency::kWatcherRead, "watcher_read"},
      {EventLatency::kWriteDone, "write_done"}};
  for (const auto& [point, name] : points) {
    const EventLatency::Quantiles q = latency.Of(point);
    seconds.Add({{"point", name}, {"quantile", "0.5"}}).Set(q.p50_ms / 1000);
    seconds.Add({{"point", name}, {"quantile", "0.99"}}).Set(q.p99_ms / 1000);
    seconds.Add({{"point", name}, {"quantile", "1"}}).Set(q.max_ms / 1000);
    events.Add({{"point", name}}).Increment(static_cast<double>(q.count));
  }
}

}  // namespace

absl::StatusOr<std::string> PrometheusMetrics::Render() const {
  prometheus::Registry registry;

  auto& jobs =
      prometheus::BuildGauge().Name("traind_jobs").Help("Jobs in each state").Register(registry);
  ASSIGN_OR_RETURN(const auto counts, store_->CountJobsByState());
  for (const Job::State state :
       {Job::QUEUED, Job::RUNNING, Job::SUCCEEDED, Job::FAILED, Job::CANCELLED}) {
    const auto it = counts.find(state);
    jobs.Add({{"state", absl::AsciiStrToLower(Job::State_Name(state))}})
        .Set(it == counts.end() ? 0 : static_cast<double>(it->second));
  }
  const auto queued = counts.find(Job::QUEUED);
  prometheus::BuildGauge()
      .Name("traind_queue_depth")
      .Help("Jobs waiting to run")
      .Register(registry)
      .Add({})
      .Set(queued == counts.end() ? 0 : static_cast<double>(queued->second));
  ASSIGN_OR_RETURN(const trainer::v1::QueueState queue, scheduler_->State());
  prometheus::BuildGauge()
      .Name("traind_queue_paused")
      .Help("1 while the queue is paused (no new job starts)")
      .Register(registry)
      .Add({})
      .Set(queue.paused() ? 1 : 0);

  auto& total_memory = prometheus::BuildGauge()
                           .Name("traind_device_total_memory_bytes")
                           .Help("Device memory as found at start (accelerators)")
                           .Register(registry);
  auto& memory = prometheus::BuildGauge()
                     .Name("traind_device_memory_bytes")
                     .Help(
                         "Memory of the device's running jobs at their latest step; kind: "
                         "current, driver (CUDA: allocated, reserved; CPU: resident), "
                         "peak_current, peak_driver")
                     .Register(registry);
  // Every device has its series, zero while idle, so a graph shows the drop when a job ends.
  std::map<std::string, std::map<std::string, double>> by_device;
  for (const auto& device : devices_.devices()) {
    if (device.total_memory_bytes() > 0) {
      total_memory.Add({{"device", device.name()}}).Set(device.total_memory_bytes());
    }
    for (const char* kind : {"current", "driver", "peak_current", "peak_driver"}) {
      by_device[device.name()][kind] = 0;
    }
  }
  auto& samples = prometheus::BuildGauge()
                      .Name("traind_job_samples_per_second")
                      .Help("Training samples per second of each running job at its latest step")
                      .Register(registry);
  auto& step_seconds = prometheus::BuildGauge()
                           .Name("traind_job_step_seconds")
                           .Help("Mean seconds per training step of each running job")
                           .Register(registry);
  Store::JobFilter running_filter;
  running_filter.states = {Job::RUNNING};
  ASSIGN_OR_RETURN(const std::vector<Job> running, store_->ListJobs(running_filter, 0, 1000));
  for (const Job& job : running) {
    if (!job.has_latest_step()) continue;  // still loading data: nothing measured yet
    const StepMetrics* step = &job.latest_step();
    // "cuda" is the first GPU, which the device list names cuda:0.
    const std::string device = job.spec().device() == "cuda" ? "cuda:0" : job.spec().device();
    auto& sums = by_device[device];
    sums["current"] += step->current_allocated_bytes();
    sums["driver"] += step->driver_allocated_bytes();
    sums["peak_current"] += step->peak_current_allocated_bytes();
    sums["peak_driver"] += step->peak_driver_allocated_bytes();
    const std::map<std::string, std::string> labels = {
        {"job", absl::StrCat(job.id())}, {"device", device}, {"model", job.spec().model()}};
    samples.Add(labels).Set(step->samples_per_second());
    step_seconds.Add(labels).Set(step->step_seconds());
  }
  for (const auto& [device, kinds] : by_device) {
    for (const auto& [kind, bytes] : kinds) {
      memory.Add({{"device", device}, {"kind", kind}}).Set(bytes);
    }
  }

  prometheus::BuildCounter()
      .Name("traind_worker_crashes_total")
      .Help("Workers that died without reporting an error (signal, unexpected exit) since start")
      .Register(registry)
      .Add({})
      .Increment(static_cast<double>(scheduler_->worker_crashes()));
  auto& store_bytes = prometheus::BuildGauge()
                          .Name("traind_store_bytes")
                          .Help("Size of the job store's files")
                          .Register(registry);
  store_bytes.Add({{"file", "db"}}).Set(FileBytes(state_dir_ + "/traind.db"));
  store_bytes.Add({{"file", "wal"}}).Set(FileBytes(state_dir_ + "/traind.db-wal"));

  if (latency_ != nullptr) AddEventLatency(*latency_, registry);
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

}  // namespace traind
