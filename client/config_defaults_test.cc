#include "client/config_defaults.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_join.h"
#include "client/trainctl.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

class ConfigDefaultsTest : public ::testing::Test {
 protected:
  ConfigDefaultsTest() : ctx_(out_, err_, false), app_(MakeTrainctlApp(ctx_, &exit_code_)) {
    char dir[] = "/tmp/config_defaults_test.XXXXXX";
    path_ = std::string(mkdtemp(dir)) + "/config.toml";
  }
  ~ConfigDefaultsTest() override {
    unlink(path_.c_str());
    rmdir(path_.substr(0, path_.rfind('/')).c_str());
  }

  // The defaults of a config file holding `text`, checked against trainctl's verbs.
  absl::StatusOr<std::vector<DefaultFlag>> Load(const std::string& text) {
    std::ofstream(path_) << text;
    absl::StatusOr<ClientConfig> config = LoadClientConfig(path_);
    if (!config.ok()) return config.status();
    if (absl::Status s = CheckConfigDefaults(*app_, config->defaults, path_); !s.ok()) return s;
    return config->defaults;
  }
  std::string Expanded(const std::vector<DefaultFlag>& defaults,
                       const std::vector<std::string>& args) {
    absl::StatusOr<VerbAt> named = ReadCommandWords(*app_, args);
    EXPECT_TRUE(named.ok()) << named.status();
    return absl::StrJoin(WithConfigDefaults(*app_, *named, defaults, args), " ");
  }

  std::ostringstream out_, err_;
  Context ctx_;
  int exit_code_ = 0;
  std::unique_ptr<CLI::App> app_;
  std::string path_;
};

TEST_F(ConfigDefaultsTest, AVerbsDefaultsAreTypedForItUnlessItGivesThem) {
  const auto defaults = Load(
      "[defaults.submit]\n"
      "device = \"cpu\"\n"
      "epochs = 3\n"
      "lr = 1e-3\n"
      "[defaults.run]\n"
      "watch = true\n"
      "[defaults.sweep]\n"
      "batch-size = [\"64\", \"128\"]\n");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(Expanded(*defaults, {"trainctl", "submit", "--model", "mlp"}),
            "trainctl submit --device=cpu --epochs=3 --lr=0.001 --model mlp");
  EXPECT_EQ(Expanded(*defaults, {"trainctl", "submit", "--epochs", "5", "--device=cuda"}),
            "trainctl submit --lr=0.001 --epochs 5 --device=cuda");
  EXPECT_EQ(Expanded(*defaults,
                     {"trainctl", "-o", "json", "run", "--", "python3", "x.py", "--epochs", "2"}),
            "trainctl -o json run --watch -- python3 x.py --epochs 2");
  EXPECT_EQ(Expanded(*defaults, {"trainctl", "sweep", "--model", "mlp"}),
            "trainctl sweep --batch-size=64,128 --model mlp");
  EXPECT_EQ(Expanded(*defaults, {"trainctl", "list"}), "trainctl list");
}

TEST_F(ConfigDefaultsTest, AMistakeIsNamedWithItsFileAndLine) {
  auto refusal = [&](const std::string& text) {
    const auto defaults = Load(text);
    EXPECT_EQ(defaults.status().code(), absl::StatusCode::kInvalidArgument) << text;
    return std::string(defaults.status().message());
  };
  EXPECT_EQ(refusal("[defaults.sbumit]\ndevice = \"cpu\"\n"),
            path_ +
                ":2: defaults.sbumit: trainctl has no command sbumit (did you mean "
                "[defaults.submit]?)");
  EXPECT_EQ(refusal("[defaults.submit]\nepochs = 3\ndevcie = \"cpu\"\n"),
            path_ +
                ":3: defaults.submit.devcie: submit has no option --devcie (did you mean "
                "device?)");
  EXPECT_EQ(refusal("[defaults.run]\nwatch = \"yes\"\n"),
            path_ + ":2: defaults.run.watch: --watch is a switch: true or false");
  EXPECT_EQ(refusal("[defaults.submit]\ndevice = { a = 1 }\n"),
            path_ + ":2: defaults.submit.device: a string, number, boolean or list");
  EXPECT_EQ(refusal("defaults = 3\n"), path_ + ":1: defaults: must be [defaults.VERB] tables");
}

// `trainctl context add` rewrites the file: the defaults stay, each of the kind it was.
TEST_F(ConfigDefaultsTest, SavingTheContextsKeepsTheDefaults) {
  auto loaded =
      Load("[defaults.submit]\ndevice = \"cpu\"\nepochs = 3\n[defaults.run]\nwatch = true\n");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  absl::StatusOr<ClientConfig> config = LoadClientConfig(path_);
  ASSERT_TRUE(config.ok());
  config->contexts.push_back(ContextEntry{"lab", "gpu-box:50051", "", "", "", ""});
  ASSERT_TRUE(SaveClientConfig(path_, *config).ok());
  absl::StatusOr<ClientConfig> again = LoadClientConfig(path_);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->defaults.size(), 3u);  // by verb, then flag: run.watch, submit.device, ...
  EXPECT_EQ(again->defaults[0].flag, "watch");
  EXPECT_EQ(again->defaults[0].kind, DefaultFlag::Kind::kBoolean);
  EXPECT_EQ(again->defaults[2].flag, "epochs");
  EXPECT_EQ(again->defaults[2].value, "3");
  EXPECT_EQ(again->defaults[2].kind, DefaultFlag::Kind::kInteger);
  ASSERT_EQ(again->contexts.size(), 1u);
}

}  // namespace
}  // namespace traind
