#include "engine/step_profiler.h"

#include <torch/csrc/autograd/profiler_legacy.h>

#if defined(TRAIND_HAVE_CUDA) && TORCH_VERSION_MAJOR >= 2
#define TRAIND_KINETO_PROFILER 1
#include <kineto/ActivityType.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#endif

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/durable_file.h"
#include "common/status_macros.h"

namespace traind {

namespace profiler = torch::autograd::profiler;

namespace {

struct Totals {
  double self_us = 0;
  int64_t calls = 0;
};

// The `limit` largest totals, as OperatorTimes; a name longer than `max_name` bytes is cut there
// and ends in "...".
void AddTop(const std::map<std::string, Totals>& totals, size_t limit, size_t max_name,
            google::protobuf::RepeatedPtrField<trainer::v1::OperatorTime>* out) {
  std::vector<std::pair<std::string, Totals>> sorted(totals.begin(), totals.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.self_us > b.second.self_us; });
  for (size_t i = 0; i < sorted.size() && i < limit; ++i) {
    auto* op = out->Add();
    op->set_name(sorted[i].first.size() > max_name ? sorted[i].first.substr(0, max_name) + "..."
                                                   : sorted[i].first);
    op->set_self_seconds(sorted[i].second.self_us / 1e6);
    op->set_calls(sorted[i].second.calls);
  }
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}

#ifdef TRAIND_KINETO_PROFILER
namespace kineto_profiler {

using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

const std::set<ActivityType>& Activities() {
  static const std::set<ActivityType> activities = {ActivityType::CPU, ActivityType::CUDA};
  return activities;
}

void Start() {
  const ProfilerConfig config(ProfilerState::KINETO);
  profiler::prepareProfiler(config, Activities());
  profiler::enableProfiler(config, Activities());
}

// Host events' self times: per thread, an event's duration less that of the events inside it.
// Host events are LibTorch's operators and the CUDA runtime's calls (cudaLaunchKernel,
// cudaGraphLaunch: host time too); Kineto's own overhead records are left out. Device work:
// kernels, copies and fills summed by name.
absl::StatusOr<trainer::v1::ProfileResult> Stop(const std::string& trace_path, int steps) {
  std::unique_ptr<profiler::ProfilerResult> recorded = profiler::disableProfiler();
  struct Span {
    uint64_t thread, start, end;
    const profiler::KinetoEvent* event;
  };
  std::vector<Span> host;
  std::map<std::string, Totals> kernels;
  double kernel_us = 0;
  for (const profiler::KinetoEvent& e : recorded->events()) {
    const auto activity = static_cast<libkineto::ActivityType>(e.activityType());
    if (e.deviceType() == c10::DeviceType::CUDA) {
      if (activity != libkineto::ActivityType::CONCURRENT_KERNEL &&
          activity != libkineto::ActivityType::GPU_MEMCPY &&
          activity != libkineto::ActivityType::GPU_MEMSET) {
        continue;
      }
      const double us = e.durationNs() / 1e3;
      Totals& t = kernels[e.name()];
      t.self_us += us;
      t.calls += 1;
      kernel_us += us;
    } else if (e.deviceType() == c10::DeviceType::CPU && e.durationNs() > 0 &&
               (activity == libkineto::ActivityType::CPU_OP ||
                activity == libkineto::ActivityType::USER_ANNOTATION ||
                activity == libkineto::ActivityType::CUDA_RUNTIME)) {
      host.push_back(Span{e.startThreadId(), e.startNs(), e.endNs(), &e});
    }
  }
  // Parents before their children: by thread, then start, the longer first.
  std::sort(host.begin(), host.end(), [](const Span& a, const Span& b) {
    return std::make_tuple(a.thread, a.start, b.end) < std::make_tuple(b.thread, b.start, a.end);
  });
  std::map<std::string, Totals> totals;
  std::vector<double> self(host.size());
  std::vector<size_t> open;  // indices into host: the enclosing events of the current one
  for (size_t i = 0; i < host.size(); ++i) {
    // An event inside another ends before it does; one that outlasts it (records of different
    // sources need not nest) is its sibling, not its child.
    while (!open.empty() &&
           (host[open.back()].thread != host[i].thread || host[open.back()].end <= host[i].start ||
            host[open.back()].end < host[i].end)) {
      open.pop_back();
    }
    const double duration = (host[i].end - host[i].start) / 1e3;
    self[i] += duration;
    if (!open.empty()) self[open.back()] -= duration;  // its direct parent
    open.push_back(i);
  }
  for (size_t i = 0; i < host.size(); ++i) {
    Totals& t = totals[host[i].event->name()];
    t.self_us += std::max(0.0, self[i]);
    t.calls += 1;
  }
  trainer::v1::ProfileResult result;
  result.set_steps(steps);
  AddTop(totals, StepProfiler::kTopOperators, StepProfiler::kMaxNameBytes,
         result.mutable_top_operators());
  AddTop(kernels, StepProfiler::kTopKernels, StepProfiler::kMaxNameBytes,
         result.mutable_top_kernels());
  result.set_kernel_seconds(kernel_us / 1e6);
  if (!trace_path.empty()) {
    RETURN_IF_ERROR(WriteDurably(trace_path, [&](const std::string& temp) {
      try {
        recorded->save(temp);
      } catch (const std::exception& e) {
        return absl::InternalError(
            absl::StrCat("cannot write the trace ", trace_path, ": ", e.what()));
      }
      return absl::OkStatus();
    }));
    result.set_trace_path(trace_path);
  }
  return result;
}

}  // namespace kineto_profiler
#endif

}  // namespace

void StepProfiler::Start() {
#ifdef TRAIND_KINETO_PROFILER
  kineto_profiler::Start();
#else
  profiler::enableProfilerLegacy(
      torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU));
#endif
  running_ = true;
}

StepProfiler::~StepProfiler() {
  if (!running_) return;
  // A job that ended inside its profiled window (cancelled, suspended, a failed step): the
  // profiler is per process, so leave it off for whatever this worker does next.
  try {
#ifdef TRAIND_KINETO_PROFILER
    profiler::disableProfiler();
#else
    profiler::disableProfilerLegacy();
#endif
  } catch (const std::exception&) {  // nothing to report it to, and nothing else to undo
  }
}

absl::StatusOr<trainer::v1::ProfileResult> StepProfiler::Stop(const std::string& trace_path,
                                                              int steps) {
  running_ = false;
#ifdef TRAIND_KINETO_PROFILER
  return kineto_profiler::Stop(trace_path, steps);
#else
  profiler::thread_event_lists lists = profiler::disableProfilerLegacy();
  std::map<std::string, Totals> totals;
  std::string trace = "{\"traceEvents\":[";
  bool first = true;
  for (size_t tid = 0; tid < lists.size(); ++tid) {
    struct Open {
      const profiler::LegacyEvent* push;
      double children_us;
    };
    std::vector<Open> stack;
    for (const profiler::LegacyEvent& event : lists[tid]) {
      if (event.kind() == profiler::EventKind::PushRange) {
        stack.push_back(Open{&event, 0});
      } else if (event.kind() == profiler::EventKind::PopRange && !stack.empty()) {
        const Open open = stack.back();
        stack.pop_back();
        const double duration = open.push->cpuElapsedUs(event);
        const std::string name = open.push->name();
        Totals& t = totals[name];
        t.self_us += duration - open.children_us;
        t.calls += 1;
        if (!stack.empty()) stack.back().children_us += duration;
        absl::StrAppendFormat(&trace,
                              "%s{\"name\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
                              "\"pid\":0,\"tid\":%d}",
                              first ? "" : ",", JsonEscape(name), open.push->cpuUs(), duration,
                              tid);
        first = false;
      }
    }
  }
  trace += "]}\n";
  trainer::v1::ProfileResult result;
  result.set_steps(steps);
  AddTop(totals, kTopOperators, kMaxNameBytes, result.mutable_top_operators());
  if (!trace_path.empty()) {
    RETURN_IF_ERROR(WriteFileDurably(trace_path, trace));
    result.set_trace_path(trace_path);
  }
  return result;
#endif
}

}  // namespace traind
