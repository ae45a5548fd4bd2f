#include "engine/worker_readiness.h"

namespace traind {
namespace {

std::optional<WorkerReadiness>& Noted() {
  static std::optional<WorkerReadiness> noted;
  return noted;
}

}  // namespace

void NoteWorkerReadiness(const WorkerReadiness& readiness) { Noted() = readiness; }

std::optional<WorkerReadiness> NotedWorkerReadiness() { return Noted(); }

}  // namespace traind
