#include "engine/batch_shards.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/blas_threads.h"
#include "models/scripted_model.h"

namespace traind {

std::string ShardingObstacle(torch::nn::Module& model) {
  if (dynamic_cast<const ScriptedModelImpl*>(&model) != nullptr) {
    return "a TorchScript model (its state and randomness are not inspected)";
  }
  if (!model.buffers().empty()) {
    return "the model has buffers (batch norm's running statistics), which shards would update "
           "at once";
  }
  for (const std::shared_ptr<torch::nn::Module>& module : model.modules()) {
    if (absl::StrContains(module->name(), "Dropout")) {
      return "the model has dropout, whose random draws the shards would take in no fixed order";
    }
  }
  return "";
}

std::unique_ptr<ShardThreads> TrainInShards(const BatchShards& planned, const CpuFacts& facts,
                                            torch::nn::Module& model, TrainStep& step,
                                            JobReport& report) {
  if (planned.shards <= 1) return nullptr;
  const std::string obstacle = ShardingObstacle(model);
  if (!obstacle.empty()) {
    report.Log("CPU: batches are not split into shards: " + obstacle);
    return nullptr;
  }
  // Each shard on one thread, the BLAS's products too: the shards are the parallelism.
  torch::set_num_threads(1);
  const BlasThreads blas = SetBlasThreads(ChooseBlasThreads(facts, 1));
  auto threads = std::make_unique<ShardThreads>(planned.shards);
  step.set_shard_threads(threads.get());
  report.Log(absl::StrFormat(
      "CPU: each batch trained in %d shards at once, %s, gradients added in shard order (%s; "
      "TRAIND_BATCH_SHARDS=1 or --threads N: intra-op threads instead)",
      planned.shards,
      blas.settable && blas.after != 1
          ? absl::StrCat("one intra-op thread each, the BLAS ", DescribeBlasThreads(blas))
          : "one thread each (intra-op and BLAS)",
      planned.explanation));
  return threads;
}

}  // namespace traind
