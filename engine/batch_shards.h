// Whether a CPU job's batches are trained in shards at once (engine/shard_threads.h,
// engine/train_step.h), once its model is built: the policy (ChooseBatchShards,
// common/cpu_threads.h) proposes a number, the model may forbid it.
#ifndef TRAIND_ENGINE_BATCH_SHARDS_H_
#define TRAIND_ENGINE_BATCH_SHARDS_H_

#include <torch/torch.h>

#include <memory>
#include <string>

#include "common/cpu_threads.h"
#include "engine/job_report.h"
#include "engine/shard_threads.h"
#include "engine/train_step.h"

namespace traind {

// Why a model's batches cannot be trained in shards at once, "" if they can. Dropout is found by
// its modules' names: a model that calls torch::dropout (or another random operator) in its
// forward is not recognised; the zoo's models do not.
std::string ShardingObstacle(torch::nn::Module& model);

// With `planned.shards` > 1 and a model that allows it: one thread per shard (the intra-op and
// BLAS threads drop to one each), handed to `step`, and the choice logged. nullptr (and a log
// line saying why, when shards were planned) otherwise. `step` uses the result: keep it alive.
std::unique_ptr<ShardThreads> TrainInShards(const BatchShards& planned, const CpuFacts& facts,
                                            torch::nn::Module& model, TrainStep& step,
                                            JobReport& report);

}  // namespace traind

#endif  // TRAIND_ENGINE_BATCH_SHARDS_H_
