#include "connect/config_file.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "connect/connection.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

class ConfigFileTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("trainctl-config-" + std::to_string(getpid()) + "-" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(ConfigFileTest, AMissingFileIsAnEmptyConfig) {
  absl::StatusOr<ClientConfig> config = LoadClientConfig((dir_ / "none.toml").string());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->contexts.empty());
  EXPECT_EQ(config->current_context, "");
}

TEST_F(ConfigFileTest, SavedContextsLoadBackSortedWithTheCurrentOne) {
  ClientConfig config;
  config.current_context = "lab";
  config.contexts.push_back({"lab", "gpu-box:50051", "/c/ca.pem", "", "", "/c/token"});
  config.contexts.push_back({"home", "unix:/run/traind.sock", "", "", "", ""});
  const std::string path = (dir_ / "sub" / "config.toml").string();
  ASSERT_TRUE(SaveClientConfig(path, config).ok());
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

  absl::StatusOr<ClientConfig> loaded = LoadClientConfig(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->current_context, "lab");
  ASSERT_EQ(loaded->contexts.size(), 2u);
  EXPECT_EQ(loaded->contexts[0].name, "home");
  const ContextEntry* lab = loaded->Find("lab");
  ASSERT_NE(lab, nullptr);
  EXPECT_EQ(lab->addr, "gpu-box:50051");
  EXPECT_EQ(lab->tls_ca, "/c/ca.pem");
  EXPECT_EQ(lab->token_file, "/c/token");
}

TEST_F(ConfigFileTest, MalformedFilesNameTheProblem) {
  absl::StatusOr<ClientConfig> syntax = LoadClientConfig(Write("a.toml", "current-context = \n"));
  EXPECT_EQ(syntax.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(syntax.status().message().find("a.toml:1"), std::string::npos) << syntax.status();

  absl::StatusOr<ClientConfig> key =
      LoadClientConfig(Write("b.toml", "[contexts.lab]\naddress = \"x:1\"\n"));
  EXPECT_EQ(key.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(key.status().message().find("contexts.lab.address"), std::string::npos);
}

TEST_F(ConfigFileTest, FlagsWinOverTheContextFieldByField) {
  const std::string token = Write("token", "s3cr3t-token-value\n");
  const std::string ca = Write("ca.pem", "-----BEGIN CERTIFICATE-----\n");
  const std::string path =
      Write("c.toml",
            "current-context = \"lab\"\n[contexts.lab]\naddr = \"gpu-box:50051\"\n"
            "tls-ca = \"" +
                ca + "\"\ntoken-file = \"" + token + "\"\n");
  ConnectionOptions options;
  absl::StatusOr<ResolvedConnection> resolved = ResolveConnection(options, path);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->addr, "gpu-box:50051");
  EXPECT_TRUE(resolved->tls);
  EXPECT_EQ(resolved->token, "s3cr3t-token-value");
  EXPECT_EQ(resolved->context, "lab");

  options.addr = "127.0.0.1:9";
  resolved = ResolveConnection(options, path);
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(resolved->addr, "127.0.0.1:9");
  EXPECT_FALSE(resolved->tls) << "an address alone leaves the current context out";
  EXPECT_EQ(resolved->token, "");

  options.context = "lab";
  resolved = ResolveConnection(options, path);
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(resolved->addr, "127.0.0.1:9");
  EXPECT_TRUE(resolved->tls) << "a named context fills what the flags left unset";
  EXPECT_EQ(resolved->token, "s3cr3t-token-value");

  options.context = "nope";
  EXPECT_EQ(ResolveConnection(options, path).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ConfigFileTest, LoopbackIsPlaintextAndOtherTcpIsTlsByDefault) {
  const std::string none = (dir_ / "none.toml").string();
  ConnectionOptions options;
  options.addr = "127.0.0.1:5000";
  EXPECT_FALSE(ResolveConnection(options, none)->tls);
  options.addr = "gpu-box:5000";
  EXPECT_TRUE(ResolveConnection(options, none)->tls);
  options.plaintext = true;
  EXPECT_FALSE(ResolveConnection(options, none)->tls);
  options.addr = "unix:/tmp/x.sock";
  options.plaintext = false;
  EXPECT_FALSE(ResolveConnection(options, none)->tls);
}

TEST_F(ConfigFileTest, ATokenFileMustHoldOneToken) {
  const std::string none = (dir_ / "none.toml").string();
  ConnectionOptions options;
  options.token_file = Write("two", "abc def\n");
  EXPECT_EQ(ResolveConnection(options, none).status().code(), absl::StatusCode::kInvalidArgument);
  options.token_file = (dir_ / "missing").string();
  absl::StatusOr<ResolvedConnection> missing = ResolveConnection(options, none);
  EXPECT_NE(missing.status().message().find("token-file"), std::string::npos);
}

}  // namespace
}  // namespace traind
