#include "engine/data_parallel.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <thread>

#include "common/free_port.h"

namespace traind {
namespace {

class RankEnvironmentTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name : {"WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}) {
      unsetenv(name);
    }
  }
};

TEST_F(RankEnvironmentTest, NoWorldSizeIsOneProcess) {
  unsetenv("WORLD_SIZE");
  absl::StatusOr<std::optional<RankPlacement>> placement = RankFromEnvironment();
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_FALSE(placement->has_value());
}

TEST_F(RankEnvironmentTest, ReadsTorchrunsContract) {
  setenv("WORLD_SIZE", "4", 1);
  setenv("RANK", "3", 1);
  setenv("LOCAL_RANK", "1", 1);
  setenv("MASTER_ADDR", "10.0.0.7", 1);
  setenv("MASTER_PORT", "29500", 1);
  absl::StatusOr<std::optional<RankPlacement>> placement = RankFromEnvironment();
  ASSERT_TRUE(placement.ok()) << placement.status();
  ASSERT_TRUE(placement->has_value());
  EXPECT_EQ((*placement)->world_size, 4);
  EXPECT_EQ((*placement)->rank, 3);
  EXPECT_EQ((*placement)->local_rank, 1);
  EXPECT_EQ((*placement)->master_addr, "10.0.0.7");
  EXPECT_EQ((*placement)->master_port, 29500);
}

TEST_F(RankEnvironmentTest, NamesTheBadVariable) {
  setenv("WORLD_SIZE", "2", 1);
  setenv("RANK", "2", 1);  // not below WORLD_SIZE
  setenv("MASTER_PORT", "29500", 1);
  absl::StatusOr<std::optional<RankPlacement>> placement = RankFromEnvironment();
  ASSERT_FALSE(placement.ok());
  EXPECT_EQ(placement.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(placement.status().message().find("RANK"), std::string::npos);

  setenv("RANK", "0", 1);
  setenv("MASTER_PORT", "http", 1);
  placement = RankFromEnvironment();
  ASSERT_FALSE(placement.ok());
  EXPECT_NE(placement.status().message().find("MASTER_PORT"), std::string::npos);

  setenv("MASTER_PORT", "70000", 1);
  placement = RankFromEnvironment();
  ASSERT_FALSE(placement.ok());
  EXPECT_NE(placement.status().message().find("MASTER_PORT"), std::string::npos);
}

// A small regression model trained for a few SGD steps on fixed data.
struct Problem {
  torch::Tensor inputs = torch::linspace(-1, 1, 64 * 6).reshape({64, 6});
  torch::Tensor targets = (inputs.sum(1, true) * 0.5).sin();

  torch::nn::Sequential Model(uint64_t seed) const {
    torch::manual_seed(seed);
    return torch::nn::Sequential(torch::nn::Linear(6, 16), torch::nn::Tanh(),
                                 torch::nn::Linear(16, 1));
  }
};

void Train(torch::nn::Sequential& model, const Problem& problem, int64_t batch, int world, int rank,
           DataParallel* dp, int steps) {
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  for (int step = 0; step < steps; ++step) {
    // Global batch `step` is world * batch samples; this rank takes its slice.
    const int64_t first = (step * world + rank) * batch;
    torch::Tensor x = problem.inputs.slice(0, first, first + batch);
    torch::Tensor y = problem.targets.slice(0, first, first + batch);
    optimizer.zero_grad();
    torch::Tensor loss = torch::mse_loss(model->forward(x), y);
    if (dp != nullptr) dp->PrepareForBackward();
    loss.backward();
    optimizer.step();
  }
}

TEST(DataParallelTest, TwoRanksMatchOneProcessWithTheGlobalBatch) {
  if (!DataParallelSupported(torch::kCPU).ok()) {
    GTEST_SKIP() << DataParallelSupported(torch::kCPU).message();
  }
  const Problem problem;
  constexpr int kSteps = 4;
  torch::nn::Sequential alone = problem.Model(1);
  Train(alone, problem, /*batch=*/16, /*world=*/1, /*rank=*/0, nullptr, kSteps);

  // Rank 1 starts from different weights: the broadcast must replace them with rank 0's.
  std::vector<torch::nn::Sequential> models{problem.Model(1), problem.Model(2)};
  const int port = *FreeLoopbackPort();
  std::vector<std::string> digests(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      absl::StatusOr<std::unique_ptr<DataParallel>> dp = DataParallel::Join(
          RankPlacement{rank, 2, rank, "127.0.0.1", port}, torch::kCPU, absl::Seconds(30));
      if (!dp.ok()) {
        errors[rank] = std::string(dp.status().message());
        return;
      }
      (*dp)->BroadcastFromRankZero(*models[rank]);
      (*dp)->AttachReducer(models[rank]->parameters());
      Train(models[rank], problem, /*batch=*/8, /*world=*/2, rank, dp->get(), kSteps);
      EXPECT_EQ((*dp)->Any({rank == 1, false}), (std::vector<bool>{true, false}));
      EXPECT_DOUBLE_EQ((*dp)->Mean(rank == 0 ? 1.0 : 3.0), 2.0);
      digests = (*dp)->AllGather(rank == 0 ? "aa" : "bb");
    });
  }
  for (std::thread& t : ranks) t.join();
  ASSERT_EQ(errors[0], "");
  ASSERT_EQ(errors[1], "");
  EXPECT_EQ(digests, (std::vector<std::string>{"aa", "bb"}));

  const std::vector<torch::Tensor> p0 = models[0]->parameters();
  const std::vector<torch::Tensor> p1 = models[1]->parameters();
  const std::vector<torch::Tensor> pa = alone->parameters();
  ASSERT_EQ(p0.size(), pa.size());
  for (size_t i = 0; i < p0.size(); ++i) {
    EXPECT_TRUE(torch::equal(p0[i], p1[i])) << "parameter " << i << " differs between the ranks";
    // Averaging two half-batch gradients is the full batch's gradient, up to rounding.
    EXPECT_TRUE(torch::allclose(p0[i], pa[i], /*rtol=*/1e-5, /*atol=*/1e-6))
        << "parameter " << i << " differs from one process's";
  }
  // The training moved the weights, so agreeing proves something.
  EXPECT_FALSE(torch::equal(p0[0], problem.Model(1)->parameters()[0]));
}

TEST(DataParallelTest, MpsIsRefusedWithTheWayOut) {
  if (!DataParallelSupported(torch::kCPU).ok()) {
    GTEST_SKIP() << DataParallelSupported(torch::kCPU).message();
  }
  const absl::Status mps = DataParallelSupported(torch::Device(torch::kMPS));
  ASSERT_FALSE(mps.ok());
  EXPECT_NE(mps.message().find("cpu"), std::string::npos) << mps.message();
}

}  // namespace
}  // namespace traind

namespace traind {
namespace {

// A resumed rank loads its checkpoint's weights before the reducer is attached, as the training
// loop does. (Loaded after attaching, the ranks' weights drift apart: the reason for that order.)
TEST(DataParallelTest, WeightsLoadedBeforeAttachingAgree) {
  if (!DataParallelSupported(torch::kCPU).ok()) {
    GTEST_SKIP() << DataParallelSupported(torch::kCPU).message();
  }
  const Problem problem;
  const std::string path = ::testing::TempDir() + "/dp_checkpoint.pt";
  {
    torch::nn::Sequential saved = problem.Model(3);
    torch::serialize::OutputArchive archive;
    saved->save(archive);
    archive.save_to(path);
  }
  std::vector<torch::nn::Sequential> models{problem.Model(1), problem.Model(1)};
  const int port = *FreeLoopbackPort();
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      absl::StatusOr<std::unique_ptr<DataParallel>> dp = DataParallel::Join(
          RankPlacement{rank, 2, rank, "127.0.0.1", port}, torch::kCPU, absl::Seconds(30));
      ASSERT_TRUE(dp.ok()) << dp.status();
      torch::serialize::InputArchive archive;
      archive.load_from(path);
      models[rank]->load(archive);
      (*dp)->BroadcastFromRankZero(*models[rank]);
      (*dp)->AttachReducer(models[rank]->parameters());
      Train(models[rank], problem, /*batch=*/8, /*world=*/2, rank, dp->get(), 4);
    });
  }
  for (std::thread& t : ranks) t.join();
  const std::vector<torch::Tensor> p0 = models[0]->parameters();
  const std::vector<torch::Tensor> p1 = models[1]->parameters();
  const std::vector<torch::Tensor> loaded = problem.Model(3)->parameters();
  for (size_t i = 0; i < p0.size(); ++i) {
    EXPECT_TRUE(torch::equal(p0[i], p1[i])) << "parameter " << i << " differs between the ranks";
  }
  EXPECT_FALSE(torch::equal(p0[0], loaded[0]));  // trained on from the loaded weights
}

}  // namespace
}  // namespace traind
