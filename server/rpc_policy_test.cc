#include "server/rpc_policy.h"

#include <set>
#include <string>

#include "gtest/gtest.h"
#include "trainer/v1/peers.pb.h"
#include "trainer/v1/trainer.grpc.pb.h"

namespace traind {
namespace {

// The table and the service must name the same methods: an RPC added to the proto without a row
// here is refused to everyone at run time, and this test says which one is missing.
TEST(RpcPolicyTest, EveryMethodOfTheServiceHasExactlyOnePolicy) {
  const google::protobuf::ServiceDescriptor* service =
      trainer::v1::SubmitJobRequest::descriptor()->file()->FindServiceByName("Trainer");
  const google::protobuf::ServiceDescriptor* peers =
      trainer::v1::ReserveRequest::descriptor()->file()->FindServiceByName("Peers");
  ASSERT_NE(service, nullptr);
  ASSERT_NE(peers, nullptr);
  std::set<std::string> methods;
  for (int i = 0; i < service->method_count(); ++i) {
    const std::string name = service->method(i)->name();
    methods.insert(name);
    EXPECT_NE(FindRpcPolicy(name), nullptr) << name << " has no row in rpc_policy.cc";
  }
  for (int i = 0; i < peers->method_count(); ++i) {
    const std::string name = "Peers." + peers->method(i)->name();
    methods.insert(name);
    EXPECT_NE(FindRpcPolicy(name), nullptr) << name << " has no row in rpc_policy.cc";
    // Another daemon running work on this machine's devices: admins only.
    EXPECT_EQ(FindRpcPolicy(name)->scope, RpcScope::kAdmin) << name;
  }
  std::set<std::string> rows;
  for (const RpcPolicy& policy : RpcPolicies()) {
    EXPECT_TRUE(rows.insert(policy.method).second) << policy.method << " has two rows";
    EXPECT_EQ(methods.count(policy.method), 1u) << policy.method << " is not a method we serve";
  }
  EXPECT_EQ(FindRpcPolicy("Shutdown2"), nullptr);
}

}  // namespace
}  // namespace traind
