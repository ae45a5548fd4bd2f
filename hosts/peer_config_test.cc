#include "hosts/peer_config.h"

#include <cstdlib>
#include <fstream>

#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(PeerConfigTest, ParsesAddressesAndContexts) {
  ConnectionOptions shared;
  shared.tls_ca = "/etc/traind/ca.pem";
  shared.token_file = "/etc/traind/peer-token";
  absl::StatusOr<PeerConfig> address = ParsePeerFlag("gpu2=10.0.0.2:50051", shared);
  ASSERT_TRUE(address.ok()) << address.status();
  EXPECT_EQ(address->name, "gpu2");
  EXPECT_EQ(address->connection.addr, "10.0.0.2:50051");
  EXPECT_EQ(address->connection.tls_ca, "/etc/traind/ca.pem");
  EXPECT_EQ(address->connection.token_file, "/etc/traind/peer-token");

  absl::StatusOr<PeerConfig> context = ParsePeerFlag("gpu3=context:lab3", shared);
  ASSERT_TRUE(context.ok()) << context.status();
  EXPECT_EQ(context->connection.context, "lab3");
  EXPECT_EQ(context->connection.addr, "");
}

TEST(PeerConfigTest, RefusesMalformedFlagsNamingThePeer) {
  for (const char* bad : {"gpu2", "gpu2=", "=10.0.0.2:1", "gpu 2=10.0.0.2:1", "gpu2=10.0.0.2",
                          "gpu2=10.0.0.2:0", "gpu2=10.0.0.2:99999", "gpu2=:50051"}) {
    absl::StatusOr<PeerConfig> parsed = ParsePeerFlag(bad, {});
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(parsed.status().message().find("peer"), absl::string_view::npos) << bad;
  }
}

TEST(PeerConfigTest, CheckPeersWantsDistinctNamesAndATokenEach) {
  TempDirForTests dir;
  const std::string token = dir.path() + "/token";
  std::ofstream(token) << "0123456789abcdef\n";
  PeersConfig config;
  config.self = "a";
  config.config_path = dir.path() + "/contexts.yaml";  // absent: no contexts
  ConnectionOptions shared;
  shared.token_file = token;
  shared.plaintext = true;
  config.peers.push_back(*ParsePeerFlag("b=127.0.0.1:5000", shared));
  EXPECT_TRUE(CheckPeers(config).ok()) << CheckPeers(config);

  PeersConfig twice = config;
  twice.peers.push_back(*ParsePeerFlag("a=127.0.0.1:5001", shared));
  EXPECT_NE(CheckPeers(twice).message().find("'a' is named twice"), absl::string_view::npos)
      << CheckPeers(twice);

  PeersConfig no_token = config;
  no_token.peers[0].connection.token_file.clear();
  EXPECT_NE(CheckPeers(no_token).message().find("peer b: no token"), absl::string_view::npos)
      << CheckPeers(no_token);

  PeersConfig unknown_context = config;
  unknown_context.peers.push_back(*ParsePeerFlag("c=context:nope", shared));
  EXPECT_NE(CheckPeers(unknown_context).message().find("peer c: context"), absl::string_view::npos)
      << CheckPeers(unknown_context);
}

TEST(PeerConfigTest, TheLaunchersEnvironmentCarriesEveryPeer) {
  PeersConfig config;
  config.self = "a";
  config.config_path = "/home/u/.config/trainctl/config.yaml";
  ConnectionOptions shared;
  shared.tls_ca = "/certs/ca.pem";
  shared.tls_cert = "/certs/client.pem";
  shared.tls_key = "/certs/client.key";
  shared.token_file = "/certs/token";
  config.peers.push_back(*ParsePeerFlag("b=10.0.0.2:50051", shared));
  config.peers.push_back(*ParsePeerFlag("c=context:lab-c", {}));
  for (const std::string& entry : PeersEnvironment(config)) {
    const size_t eq = entry.find('=');
    setenv(entry.substr(0, eq).c_str(), entry.substr(eq + 1).c_str(), 1);
  }
  absl::StatusOr<PeersConfig> back = PeersFromEnvironment();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->self, "a");
  EXPECT_EQ(back->config_path, config.config_path);
  ASSERT_EQ(back->peers.size(), 2u);
  EXPECT_EQ(back->peers[0].name, "b");
  EXPECT_EQ(back->peers[0].connection.addr, "10.0.0.2:50051");
  EXPECT_EQ(back->peers[0].connection.tls_key, "/certs/client.key");
  EXPECT_EQ(back->peers[0].connection.token_file, "/certs/token");
  EXPECT_EQ(back->peers[1].name, "c");
  EXPECT_EQ(back->peers[1].connection.context, "lab-c");
}

}  // namespace
}  // namespace traind
