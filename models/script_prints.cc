#include "models/script_prints.h"

#include <torch/csrc/jit/runtime/print_handler.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/output_budget.h"

namespace traind {

namespace {

// A printed line costs one per this many bytes, as a program's output line does.
constexpr double kLineUnit = 256;

struct Prints {
  absl::Mutex mu;
  PrintSink sink ABSL_GUARDED_BY(mu);
  // A burst of 200 lines, then 10 a second: a print per forward pass keeps a trickle. Afresh for
  // each job (SendScriptPrintsTo).
  std::optional<OutputBudget> budget ABSL_GUARDED_BY(mu);
  void FreshBudget() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    budget.emplace("lines the model printed", 200, 10);
  }
};

Prints& State() {
  static Prints* prints = [] {  // never destroyed: a print may come at exit
    auto* fresh = new Prints();
    absl::MutexLock lock(&fresh->mu);
    fresh->FreshBudget();
    return fresh;
  }();
  return *prints;
}

void OnPrint(const std::string& text) {
  Prints& prints = State();
  absl::MutexLock lock(&prints.mu);
  if (!prints.sink) return;
  const absl::Time now = absl::Now();
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();  // print() ends with a newline
  for (absl::string_view line : lines) {
    const double cost = std::max(1.0, static_cast<double>(line.size()) / kLineUnit);
    if (prints.budget->Admit(now, cost)) prints.sink(std::string(line), false);
  }
  if (std::optional<std::string> note = prints.budget->Note(now)) prints.sink(*note, true);
}

}  // namespace

void SendScriptPrintsTo(PrintSink sink) {
  Prints& prints = State();
  {
    absl::MutexLock lock(&prints.mu);
    prints.sink = std::move(sink);
    // Each job its own burst: a worker serving one job after another (WorkerRequest.
    // serve_another) must not hand the next the last one's spent budget.
    prints.FreshBudget();
  }
  torch::jit::setPrintHandler(&OnPrint);
}

void FlushScriptPrintNote() {
  Prints& prints = State();
  absl::MutexLock lock(&prints.mu);
  if (!prints.sink) return;
  if (std::optional<std::string> note = prints.budget->Note(absl::Now(), /*force=*/true)) {
    prints.sink(*note, true);
  }
}

}  // namespace traind
