#include "server/daemon_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "server/daemon_flags.h"

namespace traind {
namespace {

// traind's real flag table, a config file and a command line, as main() puts them together.
class DaemonConfigTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("traind-config-" + std::to_string(getpid()) + "-" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "traind.toml").string();
    DeclareFlags(app_, options_, raw_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Write(const std::string& text, mode_t mode = 0600) {
    std::ofstream(path_) << text;
    chmod(path_.c_str(), mode);
  }
  // The settings, or the refusal's message.
  absl::StatusOr<std::vector<SettingSource>> Load(std::vector<std::string> args = {}) {
    args.insert(args.begin(), "traind");
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    app_.parse(static_cast<int>(argv.size()), argv.data());
    absl::StatusOr<DaemonConfig> config = ReadDaemonConfig(path_, true);
    if (!config.ok()) return config.status();
    config_ = *config;
    return ApplyDaemonConfig(app_, config_);
  }
  std::string Refusal(const std::string& text) {
    Write(text);
    absl::StatusOr<std::vector<SettingSource>> settings = Load();
    return settings.ok() ? "accepted" : std::string(settings.status().message());
  }
  static const SettingSource& Named(const std::vector<SettingSource>& settings,
                                    const std::string& key) {
    for (const SettingSource& setting : settings) {
      if (setting.option->check_lname(key)) return setting;
    }
    static SettingSource none;
    return none;
  }

  std::filesystem::path dir_;
  std::string path_;
  CLI::App app_{"traind"};
  DaemonOptions options_;
  RawFlags raw_;
  DaemonConfig config_;
};

TEST_F(DaemonConfigTest, FileSetsFlagsAndTheCommandLineWins) {
  Write(
      "# the lab's box\nstate-dir = \"/srv/traind\"\nmax-queued-per-token = 7\n"
      "data-root = [\"/srv/a\", \"/srv/b\"]\ninsecure-loopback = true\ncancel-grace = 2.5\n"
      "script-memory-limit = \"1GiB\"\nwarm-workers = 3\n");
  auto settings = Load({"--warm-workers", "5"});
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(options_.state_dir, "/srv/traind");
  EXPECT_EQ(options_.limits.max_queued_jobs, 7);
  EXPECT_EQ(options_.data_roots, (std::vector<std::string>{"/srv/a", "/srv/b"}));
  EXPECT_TRUE(options_.allow_insecure_tcp);
  EXPECT_EQ(raw_.cancel_grace_seconds, 2.5);
  EXPECT_EQ(options_.script_memory_bytes, int64_t{1} << 30);
  EXPECT_EQ(options_.warm_workers, 5);  // the command line's

  EXPECT_EQ(Named(*settings, "state-dir").source, path_ + ":2");
  EXPECT_EQ(Named(*settings, "warm-workers").source, "command line");
  EXPECT_EQ(Named(*settings, "warm-workers").items, std::vector<std::string>{"5"});
  EXPECT_EQ(Named(*settings, "checkpoint-minutes").source, "default");
  const std::string shown = RenderSettings(*settings, config_);
  EXPECT_NE(shown.find("data-root = [\"/srv/a\", \"/srv/b\"]"), std::string::npos) << shown;
  EXPECT_NE(shown.find("insecure-loopback = true"), std::string::npos) << shown;
  EXPECT_NE(shown.find("# tls-cert is not set"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("print-config"), std::string::npos) << shown;
}

TEST_F(DaemonConfigTest, ASwitchTheFileSetsCanBeTurnedOffOnTheCommandLine) {
  Write("insecure-loopback = true\n");
  auto settings = Load({"--insecure-loopback=false"});
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_FALSE(options_.allow_insecure_tcp);
}

// Its output is a config file that gives the same settings.
TEST_F(DaemonConfigTest, PrintedSettingsReadBackAsAConfigFile) {
  Write("state-dir = \"/srv/t\\\"q\"\nlisten = [\"unix:/tmp/a.sock\"]\nhost-wait = 0.5\n");
  auto settings = Load();
  ASSERT_TRUE(settings.ok()) << settings.status();
  const std::string shown = RenderSettings(*settings, config_);
  DaemonOptions again_options;
  RawFlags again_raw;
  CLI::App again{"traind"};
  DeclareFlags(again, again_options, again_raw);
  std::vector<std::string> args{"traind"};
  std::vector<char*> argv{args[0].data()};
  again.parse(1, argv.data());
  Write(shown);
  absl::StatusOr<DaemonConfig> config = ReadDaemonConfig(path_, true);
  ASSERT_TRUE(config.ok()) << config.status() << "\n" << shown;
  ASSERT_TRUE(ApplyDaemonConfig(again, *config).ok()) << shown;
  EXPECT_EQ(again_options.state_dir, "/srv/t\"q");
  EXPECT_EQ(again_options.listen, options_.listen);
  EXPECT_EQ(again_raw.host_wait_minutes, 0.5);
}

TEST_F(DaemonConfigTest, MistakesNameTheFileLineAndKey) {
  EXPECT_EQ(Refusal("state-dir = \"/a\"\nmax-queud-per-token = 3\n"),
            path_ +
                ":2: max-queud-per-token: unknown key; the keys are traind's flags without "
                "their dashes (`traind --help`); did you mean max-queued-per-token?");
  EXPECT_EQ(Refusal("\nwarm-workers = \"3\"\n"),
            path_ + ":2: warm-workers: expected a number, not a string (3)");
  EXPECT_EQ(Refusal("state-dir = 5\n"),
            path_ + ":1: state-dir: expected a string (in quotes), not an integer (5)");
  EXPECT_EQ(Refusal("warm-workers = 1.5\n"),
            path_ + ":1: warm-workers: expected an integer, not a number (1.5)");
  EXPECT_EQ(Refusal("insecure-loopback = \"yes\"\n"),
            path_ +
                ":1: insecure-loopback: --insecure-loopback is a switch: true or false, not "
                "a string");
  EXPECT_EQ(Refusal("state-dir = [\"/a\", \"/b\"]\n"),
            path_ + ":1: state-dir: takes one value, not a list");
  EXPECT_EQ(Refusal("warm-workers = 65\n"),
            path_ + ":1: warm-workers: Value 65 not in range 0 to 64");
  EXPECT_EQ(Refusal("cancel-grace = 0\n"), path_ + ":1: cancel-grace: must be above 0, got 0");
  EXPECT_EQ(Refusal("script-sandbox = \"docker\"\n").rfind(path_ + ":1: script-sandbox: ", 0), 0u);
  EXPECT_EQ(Refusal("config = \"/etc/other.toml\"\n"),
            path_ + ":1: config: only the command line takes --config");
  EXPECT_EQ(Refusal("[limits]\nwarm-workers = 1\n"),
            path_ +
                ":1: limits: a table; traind's config is KEY = VALUE lines, each key a "
                "flag's name");
  // toml++ refuses a key given twice, with its line.
  const std::string duplicate = Refusal("warm-workers = 1\nstate-dir = \"/a\"\nwarm-workers = 2\n");
  EXPECT_EQ(duplicate.rfind(path_ + ":3: ", 0), 0u) << duplicate;
  EXPECT_NE(duplicate.find("warm-workers"), std::string::npos) << duplicate;
}

TEST_F(DaemonConfigTest, FilesOthersMayWriteOrNooneMayReadAreRefused) {
  Write("warm-workers = 1\n", 0666);
  absl::StatusOr<DaemonConfig> config = ReadDaemonConfig(path_, true);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            path_ +
                ": others than its owner may write it (mode 0666), and its settings choose "
                "the programs traind runs: chmod go-w " +
                path_);
  if (geteuid() != 0) {  // root reads a file of mode 0000
    Write("warm-workers = 1\n", 0000);
    config = ReadDaemonConfig(path_, true);
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.status().message(), path_ + ": cannot read: Permission denied");
  }
  config = ReadDaemonConfig((dir_ / "none.toml").string(), true);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            (dir_ / "none.toml").string() + ": cannot read: No such file or directory");
  config = ReadDaemonConfig((dir_ / "none.toml").string(), false);
  ASSERT_TRUE(config.ok());
  EXPECT_TRUE(config->path.empty());
}

}  // namespace
}  // namespace traind
