#include "common/message_bounds.h"

#include "gtest/gtest.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {
namespace {

TEST(MessageBoundsTest, AHugeAfterListIsRefusedNamingTheField) {
  trainer::v1::SubmitJobRequest request;
  request.mutable_spec()->set_model("lenet5");
  for (int i = 0; i < 1200000; ++i) request.add_after(i + 1);  // the example
  const absl::Status status = CheckMessageBounds(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "after: at most 64 entries, got 1200000");
  request.mutable_after()->Truncate(64);
  EXPECT_TRUE(CheckMessageBounds(request).ok());
}

TEST(MessageBoundsTest, StringsAreBoundedEvenInFieldsNobodyListed) {
  trainer::v1::SubmitJobRequest request;
  request.mutable_spec()->set_name(std::string(3 << 20, 'x'));
  EXPECT_EQ(CheckMessageBounds(request).message(), "spec.name: at most 256 bytes, got 3145728");
  request.mutable_spec()->set_name("fine");
  request.mutable_spec()->set_model(std::string(1000, 'm'));  // echoed by "unknown model" errors
  EXPECT_EQ(CheckMessageBounds(request).message(), "spec.model: at most 256 bytes, got 1000");
  request.mutable_spec()->set_model("lenet5");
  request.mutable_spec()->set_data_dir("/" + std::string(4000, 'd'));  // a path may be long
  EXPECT_TRUE(CheckMessageBounds(request).ok());
  request.mutable_spec()->set_data_dir("/" + std::string(5000, 'd'));
  EXPECT_EQ(CheckMessageBounds(request).message(), "spec.data_dir: at most 4096 bytes, got 5001");
}

TEST(MessageBoundsTest, NestedAndRepeatedMessagesAreWalked) {
  trainer::v1::SubmitSweepRequest request;
  for (int i = 0; i < 3; ++i) request.mutable_spec()->add_configs()->set_model("mlp");
  request.mutable_spec()->mutable_configs(2)->set_name(std::string(300, 'n'));
  EXPECT_EQ(CheckMessageBounds(request).message(),
            "spec.configs[2].name: at most 256 bytes, got 300");
  request.mutable_spec()->mutable_configs(2)->clear_name();
  auto* axis = request.mutable_spec()->add_axes();
  axis->set_field("batch_size");
  for (int i = 0; i < 20000; ++i) axis->add_values("1");
  EXPECT_EQ(CheckMessageBounds(request).message(),
            "spec.axes[0].values: at most 10000 entries, got 20000");
  axis->mutable_values()->DeleteSubrange(0, 19990);
  EXPECT_TRUE(CheckMessageBounds(request).ok());
}

TEST(MessageBoundsTest, ListFiltersAreBoundedToo) {
  trainer::v1::ListJobsRequest request;
  for (int i = 0; i < 100; ++i) request.add_states(trainer::v1::Job::QUEUED);
  EXPECT_EQ(CheckMessageBounds(request).message(), "states: at most 64 entries, got 100");
}

}  // namespace
}  // namespace traind
