#include "supervise/torchrun.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(TorchrunTest, TheEnvironmentOfOneRank) {
  EXPECT_EQ(TorchrunEnvironment({3, 1, 4, "node-a", 29500}),
            (std::vector<std::string>{"RANK=3", "LOCAL_RANK=1", "WORLD_SIZE=4",
                                      "MASTER_ADDR=node-a", "MASTER_PORT=29500"}));
}

TEST(TorchrunTest, OneRendezvousPortPerSlurmJobInRange) {
  EXPECT_EQ(RendezvousPort(1), 20001);
  EXPECT_EQ(RendezvousPort(20000), 20000);
  EXPECT_EQ(RendezvousPort(39999), 39999);
}

}  // namespace
}  // namespace traind
