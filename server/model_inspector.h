// Vets an uploaded TorchScript file without LibTorch in traind: a traind-worker loads it on the CPU
// (WorkerRequest.inspect_model) and answers with one LogLine. Blocks for the worker's life (about
// a second: LibTorch's start-up), so call it from an executor thread, never a reaction.
#ifndef TRAIND_SERVER_MODEL_INSPECTOR_H_
#define TRAIND_SERVER_MODEL_INSPECTOR_H_

#include <string>

#include "absl/status/statusor.h"

namespace traind {

// The worker's description ("MyNet: 61,706 parameters in 10 tensors"), or INVALID_ARGUMENT with
// its reason (not TorchScript, no forward, nothing to train). A worker that crashes or takes over
// a minute is INTERNAL / DEADLINE_EXCEEDED, saying so.
absl::StatusOr<std::string> InspectModel(const std::string& worker_path, const std::string& path);

}  // namespace traind

#endif  // TRAIND_SERVER_MODEL_INSPECTOR_H_
