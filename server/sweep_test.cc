#include <limits>

#include "absl/strings/str_cat.h"
#include "common/job_spec.h"
#include "common/spec_fields.h"
#include "common/spec_ranges.h"
#include "gtest/gtest.h"
#include "server/sweep_expansion.h"
#include "server/sweep_report.h"
#include "server/sweep_test_grid.h"

namespace traind {
namespace {

using trainer::v1::Job;
using trainer::v1::SweepSpec;

TEST(SweepExpansionTest, GridTimesRepeatInterleaved) {
  auto members = ExpandSweep(Grid());
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 16u);
  EXPECT_EQ((*members)[0].model(), "lenet5");
  EXPECT_EQ((*members)[0].device(), "cpu");
  EXPECT_EQ((*members)[0].threads(), 1);
  EXPECT_EQ((*members)[1].threads(), 2);
  EXPECT_EQ((*members)[7].model(), "mlp");
  // The second repeat starts after every configuration ran once.
  EXPECT_EQ((*members)[8].SerializeAsString(), (*members)[0].SerializeAsString());
  EXPECT_EQ((*members)[3].epochs(), 1);
}

TEST(SweepExpansionTest, AnAxisTwiceOrAValueTwiceIsRefused) {
  SweepSpec twice = Grid();
  auto* again = twice.add_axes();
  again->set_field("seed");
  again->add_values("1");
  again->add_values("2");
  *twice.add_axes() = *again;  // two seed axes: every member twice
  auto members = ExpandSweep(twice);
  EXPECT_EQ(members.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(members.status().message().find("'seed' is an axis twice"), std::string::npos)
      << members.status();

  SweepSpec same_value = Grid();
  auto* lr = same_value.add_axes();
  lr->set_field("learning_rate");
  lr->add_values("1e-3");
  lr->add_values("0.001");  // the same number written another way
  members = ExpandSweep(same_value);
  EXPECT_EQ(members.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(members.status().message().find("'learning_rate' has the value 0.001 twice"),
            std::string::npos)
      << members.status();

  SweepSpec params;
  params.mutable_base()->mutable_script()->add_args("train.py");
  auto* seeds = params.add_axes();
  seeds->set_field("param.seed");
  seeds->add_values("1");
  seeds->add_values("1");
  EXPECT_EQ(ExpandSweep(params).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SweepExpansionTest, AProgramsParamsAreAxesLikeFields) {
  trainer::v1::SweepSpec spec;
  spec.mutable_base()->mutable_script()->add_args("train.py");
  spec.mutable_base()->mutable_script()->add_args("--seed={seed}");
  for (const auto& [field, values] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"device", {"cpu", "cuda"}}, {"param.seed", {"1", "2"}}}) {
    trainer::v1::SweepAxis* axis = spec.add_axes();
    axis->set_field(field);
    for (const std::string& value : values) axis->add_values(value);
  }
  auto members = ExpandSweep(spec);
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 4u);
  EXPECT_EQ((*members)[1].device(), "cpu");
  EXPECT_EQ((*members)[1].script().params().at("seed"), "2");
  EXPECT_EQ((*members)[2].device(), "cuda");
  // The arguments keep their placeholder: members differ in their params only.
  EXPECT_EQ((*members)[3].script().args(1), "--seed={seed}");
}

TEST(SweepExpansionTest, ExplicitConfigsMergeOntoTheBase) {
  SweepSpec spec;
  spec.mutable_base()->set_epochs(1);
  spec.mutable_base()->set_dataset("fake");
  spec.add_configs()->set_model("vgg16");
  auto* resnet = spec.add_configs();
  resnet->set_model("resnet18");
  resnet->set_image_size(224);
  auto* devices = spec.add_axes();
  devices->set_field("device");
  devices->add_values("cpu");
  devices->add_values("cuda");
  auto members = ExpandSweep(spec);
  ASSERT_TRUE(members.ok());
  ASSERT_EQ(members->size(), 4u);
  EXPECT_EQ((*members)[2].model(), "resnet18");
  EXPECT_EQ((*members)[2].image_size(), 224);
  EXPECT_EQ((*members)[2].dataset(), "fake");
}

TEST(SweepExpansionTest, BadAxesNameTheField) {
  SweepSpec spec = Grid();
  spec.mutable_axes(2)->set_field("thread_count");
  EXPECT_NE(ExpandSweep(spec).status().message().find("thread_count"), std::string::npos);
  spec = Grid();
  spec.mutable_axes(2)->set_values(0, "two");
  EXPECT_EQ(ExpandSweep(spec).status().message(),
            "threads: 'two' is not an integer from -2147483648 to 2147483647");
  spec = Grid();
  spec.set_repeat(5000);
  EXPECT_EQ(ExpandSweep(spec).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SweepExpansionTest, BatchSizeAutoIsAValueLikeANumber) {
  SweepSpec spec;
  spec.mutable_base()->set_model("mlp");
  spec.mutable_base()->set_batch_size_auto(true);  // a number on the axis turns the search off
  auto* sizes = spec.add_axes();
  sizes->set_field("batch_size");
  sizes->add_values("auto");
  sizes->add_values("64");
  auto members = ExpandSweep(spec);
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 2u);
  EXPECT_TRUE((*members)[0].batch_size_auto());
  EXPECT_EQ(GetSpecField((*members)[0], "batch_size"), "auto");
  EXPECT_FALSE((*members)[1].batch_size_auto());
  EXPECT_EQ(GetSpecField((*members)[1], "batch_size"), "64");
  sizes->set_values(1, "big");
  EXPECT_EQ(ExpandSweep(spec).status().message(),
            "batch_size: expected 'auto' or an integer from 1 to 1048576, got 'big'");
}

TEST(SweepExpansionTest, MembersMayNotMultiplyALargeBaseIntoGigabytes) {
  SweepSpec spec = Grid();
  spec.mutable_base()->set_name(std::string(4 << 20, 'x'));  // 16 members of 4 MiB each
  absl::StatusOr<std::vector<trainer::v1::JobSpec>> members = ExpandSweep(spec);
  EXPECT_EQ(members.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(members.status().message().find("at most 64 MiB: 16 members"), std::string::npos)
      << members.status();
  spec.set_repeat(1);
  spec.mutable_base()->set_name(std::string(1 << 20, 'x'));  // 8 members of 1 MiB: fine
  EXPECT_TRUE(ExpandSweep(spec).ok());
}

// Issue "integers and values that cannot run": a value refused in a job is refused on an axis,
// in the base and in a configuration too, naming the field, before any member is copied.
TEST(SweepExpansionTest, ValuesAreHeldToTheFieldsRanges) {
  SweepSpec spec = Grid();
  auto* rates = spec.add_axes();
  rates->set_field("lr");
  rates->add_values("1e-3");
  rates->add_values("1e300");  // "float overflow" at run time
  EXPECT_EQ(ExpandSweep(spec).status().message(),
            "learning_rate: must be greater than 0 and at most 1e+30, got 1e+300");
  rates->set_values(1, "1e30");
  EXPECT_TRUE(ExpandSweep(spec).ok()) << ExpandSweep(spec).status();

  spec = Grid();
  auto* sizes = spec.add_axes();
  sizes->set_field("batchSize");
  sizes->add_values("2000000");
  EXPECT_EQ(ExpandSweep(spec).status().message(), "batch_size: must be 1 to 1048576, got 2000000");
  sizes->set_values(0, "auto");  // the search: no number to check
  EXPECT_TRUE(ExpandSweep(spec).ok()) << ExpandSweep(spec).status();

  spec = Grid();
  auto* padding = spec.add_axes();
  padding->set_field("random-crop");  // trainctl's flag name
  padding->add_values("1000000");     // "storage size overflowed" at run time
  EXPECT_EQ(ExpandSweep(spec).status().message(),
            "random_crop_padding: must be 0 to 256, got 1000000");

  spec = Grid();
  spec.mutable_base()->set_epochs(0);
  EXPECT_EQ(ExpandSweep(spec).status().message(), "epochs: must be 1 to 100000, got 0");
  spec = Grid();
  spec.add_configs()->set_model("mlp");
  spec.add_configs()->set_limit_test(-1);
  EXPECT_EQ(ExpandSweep(spec).status().message(), "limit_test: must be 0 to 2147483647, got -1");
}

// An axis value may be a path (4096 bytes), but the field it sets keeps its own bound: a 4,000-byte
// name or model was stored in every member before.
TEST(SweepExpansionTest, ValuesAreHeldToTheFieldsLengths) {
  for (const char* field : {"name", "model", "optimizer", "time_limit"}) {
    SweepSpec spec = Grid();
    auto* axis = spec.add_axes();
    axis->set_field(field);
    axis->add_values(std::string(4000, 'n'));
    const absl::Status expanded = ExpandSweep(spec).status();
    EXPECT_EQ(expanded.code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_NE(expanded.message().find("at most 256 bytes, got 4000"), std::string::npos)
        << field << ": " << expanded;
  }
  SweepSpec paths = Grid();
  auto* dirs = paths.add_axes();
  dirs->set_field("data_dir");
  dirs->add_values("/data/" + std::string(3000, 'd'));  // a path may be this long
  EXPECT_TRUE(ExpandSweep(paths).ok()) << ExpandSweep(paths).status();
}

// Every field of the range table that an axis can set is checked there: a value just outside
// each range is refused with that field's message.
TEST(SweepExpansionTest, EveryRangedFieldIsCheckedOnAnAxis) {
  const auto* descriptor = trainer::v1::JobSpec::descriptor();
  for (const SpecFieldRange& range : SpecFieldRanges()) {
    const auto* field = descriptor->FindFieldByName(range.field);
    if (field == nullptr) continue;  // inside benchmark or debug: not on an axis
    using google::protobuf::FieldDescriptor;
    std::string outside;
    if (range.kind == SpecFieldRange::Kind::kReal) {
      outside = absl::StrCat(range.real_max * 2 + 1);
    } else {
      const uint64_t type_max = field->cpp_type() == FieldDescriptor::CPPTYPE_INT32
                                    ? std::numeric_limits<int32_t>::max()
                                : field->cpp_type() == FieldDescriptor::CPPTYPE_UINT32
                                    ? std::numeric_limits<uint32_t>::max()
                                : field->cpp_type() == FieldDescriptor::CPPTYPE_INT64
                                    ? std::numeric_limits<int64_t>::max()
                                    : std::numeric_limits<uint64_t>::max();
      // Above the range where the type goes higher, else below it (a signed type's top).
      outside = range.int_max >= 0 && static_cast<uint64_t>(range.int_max) < type_max
                    ? absl::StrCat(static_cast<uint64_t>(range.int_max) + 1)
                    : absl::StrCat(range.int_min - 1);
    }
    SweepSpec spec = Grid();
    auto* axis = spec.add_axes();
    axis->set_field(range.field);
    axis->add_values(outside);
    const absl::Status status = ExpandSweep(spec).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << range.field << " = " << outside;
    EXPECT_EQ(status.message().rfind(absl::StrCat(range.field, ": must be "), 0), 0u) << status;
  }
}

// The members that ExpandSweep returns go through the whole validation in CreateSweep
// (PrepareSpec: ApplyDefaults, then ValidateJobSpec), whose first step is the same table.
TEST(SweepExpansionTest, MembersPassTheJobValidation) {
  auto members = ExpandSweep(Grid());
  ASSERT_TRUE(members.ok()) << members.status();
  for (trainer::v1::JobSpec member : *members) {
    ApplyDefaults(&member);
    EXPECT_TRUE(ValidateJobSpec(member).ok()) << ValidateJobSpec(member);
  }
}

}  // namespace
}  // namespace traind
