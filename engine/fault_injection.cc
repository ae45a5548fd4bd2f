#include "engine/fault_injection.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace traind {

namespace {

void Crash(const std::string& kind, const torch::Device& device) {
  if (kind == "oom") {
    // 1 PiB: more than any device has, so the allocator itself reports out of memory.
    torch::empty({int64_t{1} << 50}, torch::TensorOptions().dtype(torch::kUInt8).device(device));
  }
  std::fprintf(stderr, "traind-worker: injecting fault '%s'\n", kind.c_str());
  std::fflush(stderr);
  if (kind == "abort") std::abort();
  if (kind == "exit") std::_Exit(42);
  if (kind == "hang") {
    while (true) pause();
  }
  raise(SIGSEGV);
}

}  // namespace

void BeforeStep(const trainer::v1::DebugSpec& debug, int64_t global_step, bool resumed,
                const torch::Device& device) {
  if (debug.step_delay_ms() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(debug.step_delay_ms()));
  }
  if (!debug.crash_kind().empty() && !resumed && global_step == debug.crash_at_step()) {
    Crash(debug.crash_kind(), device);
  }
}

}  // namespace traind
