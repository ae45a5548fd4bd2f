#include "client/spec_flags.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/spec_fields.h"

namespace traind {
namespace {

using google::protobuf::FieldDescriptor;

// A row naming a field that does not exist (or a switch on a non-bool) would fail only when a
// user typed that flag; check every row here instead.
TEST(SpecFlagTableTest, EveryRowNamesARealFieldOfTheRightKind) {
  std::set<std::string> flags;
  for (const SpecFlagInfo& row : SpecFlagTable()) {
    EXPECT_TRUE(flags.insert(row.flag).second) << row.flag << " twice";
    const FieldDescriptor* field = trainer::v1::JobSpec::descriptor()->FindFieldByName(row.field);
    ASSERT_NE(field, nullptr) << row.flag << " -> " << row.field;
    EXPECT_EQ(row.is_switch, field->cpp_type() == FieldDescriptor::CPPTYPE_BOOL) << row.flag;
  }
}

TEST(SpecFlagTableTest, FlagsReachTheSpecAndBadValuesNameTheField) {
  CLI::App app;
  SpecFlags flags;
  AddSpecFlags(&app, &flags);
  app.parse("--model mlp --epochs 2 --hflip --tf32 off", /*program_name_included=*/false);
  trainer::v1::JobSpec spec;
  spec.set_dataset("fake");
  ASSERT_TRUE(ApplySpecFlags(flags, &spec).ok());
  EXPECT_EQ(spec.model(), "mlp");
  EXPECT_EQ(spec.epochs(), 2);
  EXPECT_TRUE(spec.horizontal_flip());
  EXPECT_EQ(spec.tf32(), "off");
  EXPECT_FALSE(spec.has_learning_rate()) << "a flag not given leaves the field alone";

  CLI::App bad_app;
  SpecFlags bad;
  AddSpecFlags(&bad_app, &bad);
  bad_app.parse("--epochs two", /*program_name_included=*/false);
  trainer::v1::JobSpec other;
  absl::Status status = ApplySpecFlags(bad, &other);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "epochs: 'two' is not an integer from -2147483648 to 2147483647");
  // Out of range is refused, never truncated (4294967297 would wrap to 1).
  trainer::v1::JobSpec big;
  EXPECT_EQ(SetSpecField(&big, "epochs", "4294967297").message(),
            "epochs: '4294967297' is not an integer from -2147483648 to 2147483647");
  EXPECT_EQ(big.epochs(), 0);
}

// `args` through trainctl's flags onto a spec of the fake dataset.
absl::Status Apply(const std::string& args, trainer::v1::JobSpec* spec) {
  CLI::App app;
  SpecFlags flags;
  AddSpecFlags(&app, &flags);
  app.parse(args, /*program_name_included=*/false);
  spec->set_dataset("fake");
  return ApplySpecFlags(flags, spec);
}

// The fast paths are on by default where they apply (the worker decides); --no-X is how a user
// turns one off, and giving both is a usage error, not "last one wins".
TEST(SpecFlagTableTest, NoFlagsSetTheFieldFalseAndConflictWithTheirPositive) {
  trainer::v1::JobSpec off;
  ASSERT_TRUE(Apply("--model mlp --no-cuda-graph --no-device-resident", &off).ok());
  EXPECT_TRUE(off.has_cuda_graph());
  EXPECT_FALSE(off.cuda_graph());
  EXPECT_TRUE(off.has_device_resident());
  EXPECT_FALSE(off.device_resident());

  trainer::v1::JobSpec unset;
  ASSERT_TRUE(Apply("--model mlp", &unset).ok());
  EXPECT_FALSE(unset.has_cuda_graph()) << "unset: the worker chooses";
  EXPECT_FALSE(unset.has_device_resident());

  trainer::v1::JobSpec both;
  const absl::Status status =
      Apply("--model mlp --device cuda --cuda-graph --no-cuda-graph", &both);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "--cuda-graph and --no-cuda-graph: give one of them");
}

TEST(SpecFlagTableTest, BenchMatmulTakesOnlyTheNamedFlags) {
  CLI::App app;
  SpecFlags flags;
  AddSpecFlags(&app, &flags, {"--device", "--threads"});
  EXPECT_NE(app.get_option_no_throw("--device"), nullptr);
  EXPECT_NE(app.get_option_no_throw("--threads"), nullptr);
  EXPECT_EQ(app.get_option_no_throw("--model"), nullptr);
}

}  // namespace
}  // namespace traind
