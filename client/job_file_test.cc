#include "client/job_file.h"

#include <unistd.h>

#include <fstream>

#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

// In one temporary directory, removed when the test program exits (nothing left in /tmp).
std::string WriteTemp(const std::string& name, const std::string& text) {
  static TempDirForTests dir;
  const std::string path = dir / name;
  std::ofstream(path) << text;
  return path;
}

TEST(JobFileTest, YamlMapsOntoJobSpec) {
  trainer::v1::JobSpec spec;
  const std::string path = WriteTemp("a.yaml",
                                     "model: lenet5\n"
                                     "dataset: fashion-mnist\n"
                                     "epochs: 10\n"
                                     "learning_rate: 5e-4\n"
                                     "nesterov: true\n"
                                     "name: '123'\n");
  ASSERT_TRUE(LoadJobFile(path, &spec).ok());
  EXPECT_EQ(spec.model(), "lenet5");
  EXPECT_EQ(spec.epochs(), 10);
  EXPECT_DOUBLE_EQ(spec.learning_rate(), 5e-4);
  EXPECT_TRUE(spec.nesterov());
  EXPECT_EQ(spec.name(), "123");
}

TEST(JobFileTest, JsonWithCamelCase) {
  trainer::v1::JobSpec spec;
  const std::string path = WriteTemp("a.json", R"({"model": "mlp", "batchSize": 32})");
  ASSERT_TRUE(LoadJobFile(path, &spec).ok());
  EXPECT_EQ(spec.batch_size(), 32);
}

TEST(JobFileTest, UnknownFieldNamesFileAndField) {
  trainer::v1::JobSpec spec;
  const std::string path = WriteTemp("bad.yaml", "model: mlp\nepochz: 3\n");
  absl::Status status = LoadJobFile(path, &spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find(path), absl::string_view::npos);
  EXPECT_NE(status.message().find("epochz"), absl::string_view::npos);
}

TEST(JobFileTest, ADuplicateKeyIsAnErrorNamingItsLine) {
  trainer::v1::JobSpec spec;
  absl::Status yaml =
      LoadJobFile(WriteTemp("twice.yaml", "model: mlp\nepochs: 3\nepochs: 30\n"), &spec);
  EXPECT_EQ(yaml.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(yaml.message().find("line 3: duplicate key 'epochs'"), absl::string_view::npos) << yaml;
  absl::Status json = LoadJobFile(
      WriteTemp(
          "twice.json",
          "{\"model\": \"mlp\",\n \"debug\": {\"crashKind\": \"exit\", \"crashKind\": \"hang\"}}"),
      &spec);
  EXPECT_EQ(json.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(json.message().find("line 2: duplicate key 'crashKind'"), absl::string_view::npos)
      << json;
}

TEST(JobFileTest, MoreThanOneDocumentIsAnError) {
  trainer::v1::JobSpec spec;
  absl::Status status =
      LoadJobFile(WriteTemp("two.yaml", "model: mlp\n---\nmodel: lenet5\n"), &spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("2 documents"), absl::string_view::npos) << status;
  trainer::v1::SweepSpec sweep;
  EXPECT_EQ(LoadSweepFile(WriteTemp("two-sweeps.yaml", "name: a\n---\nname: b\n"), &sweep).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(JobFileTest, TabIndentedJsonStillLoads) {
  trainer::v1::JobSpec spec;
  ASSERT_TRUE(
      LoadJobFile(WriteTemp("tabs.json", "{\n\t\"model\": \"mlp\",\n\t\"epochs\": 2\n}\n"), &spec)
          .ok());
  EXPECT_EQ(spec.epochs(), 2);
}

TEST(JobFileTest, BrokenYamlIsAnError) {
  trainer::v1::JobSpec spec;
  EXPECT_EQ(LoadJobFile(WriteTemp("broken.yaml", "model: [unclosed\n"), &spec).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadJobFile("/nonexistent.yaml", &spec).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace traind
