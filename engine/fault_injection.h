// JobSpec.debug, for the daemon's fault tests: real crashes of the worker process (a segfault, an
// abort, an exit, a hang, the allocator's own out-of-memory error) at a chosen step, and a delay
// before every step so a test's job runs as long as the test needs, whatever the machine's speed.
#ifndef TRAIND_ENGINE_FAULT_INJECTION_H_
#define TRAIND_ENGINE_FAULT_INJECTION_H_

#include <torch/torch.h>

#include <cstdint>

#include "trainer/v1/trainer.pb.h"

namespace traind {

// Called before training step `global_step`. Sleeps step_delay_ms; crashes as crash_kind says at
// crash_at_step, unless the run `resumed` from a checkpoint (a crash happens once).
void BeforeStep(const trainer::v1::DebugSpec& debug, int64_t global_step, bool resumed,
                const torch::Device& device);

}  // namespace traind

#endif  // TRAIND_ENGINE_FAULT_INJECTION_H_
