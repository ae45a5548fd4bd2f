// What a TorchScript model prints (`print(...)` in its scripted code) goes to the job's log, line
// by line, instead of to the worker's stderr, where nobody saw it. A model that prints in every
// forward pass would flood the store: the lines are bounded as a program's output is
// (common/output_budget.h: a burst, then a steady rate, long lines costing their bytes), and what
// is over is counted and said now and then. Thread-safe: shard threads run forward at once.
#ifndef TRAIND_MODELS_SCRIPT_PRINTS_H_
#define TRAIND_MODELS_SCRIPT_PRINTS_H_

#include <functional>
#include <string>

namespace traind {

// `sink(line, is_note)`: one printed line (is_note false), or a note that lines were dropped.
// Called with a lock held, one call at a time; it must not print through TorchScript itself.
using PrintSink = std::function<void(const std::string& line, bool is_note)>;

// From now on, TorchScript's prints (torch::jit::setPrintHandler) go to `sink`.
void SendScriptPrintsTo(PrintSink sink);

// Says what was dropped since the last note, if anything (at the end of a job).
void FlushScriptPrintNote();

}  // namespace traind

#endif  // TRAIND_MODELS_SCRIPT_PRINTS_H_
