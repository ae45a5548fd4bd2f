#include "engine/step_profiler.h"

#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace traind {

namespace profiler = torch::autograd::profiler;

namespace {

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}

}  // namespace

void StepProfiler::Start() {
  profiler::enableProfilerLegacy(
      torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU));
  running_ = true;
}

absl::StatusOr<trainer::v1::ProfileResult> StepProfiler::Stop(const std::string& trace_path,
                                                              int steps) {
  running_ = false;
  profiler::thread_event_lists lists = profiler::disableProfilerLegacy();
  struct Totals {
    double self_us = 0;
    int64_t calls = 0;
  };
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
  std::vector<std::pair<std::string, Totals>> sorted(totals.begin(), totals.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.self_us > b.second.self_us; });
  trainer::v1::ProfileResult result;
  result.set_steps(steps);
  for (size_t i = 0; i < sorted.size() && i < kTopOperators; ++i) {
    auto* op = result.add_top_operators();
    op->set_name(sorted[i].first);
    op->set_self_seconds(sorted[i].second.self_us / 1e6);
    op->set_calls(sorted[i].second.calls);
  }
  if (!trace_path.empty()) {
    const std::string temp = trace_path + ".tmp";
    std::ofstream out(temp);
    out << trace;
    out.close();
    if (!out || std::rename(temp.c_str(), trace_path.c_str()) != 0) {
      return absl::InternalError(absl::StrCat("cannot write the trace ", trace_path));
    }
    result.set_trace_path(trace_path);
  }
  return result;
}

}  // namespace traind
