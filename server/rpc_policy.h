// Who may call each RPC of trainer.v1.Trainer (and of trainer.v1.Peers, as "Peers.METHOD"): the one
// table that decides it. AccessControl::Admit consults it before any handler runs, and refuses a
// method that is not listed, so a new RPC is served to nobody until it is given a row here
// (RpcPolicyTest checks the table against the service's descriptor). docs/remote.md prints the same
// table for people.
#ifndef TRAIND_SERVER_RPC_POLICY_H_
#define TRAIND_SERVER_RPC_POLICY_H_

#include <vector>

#include "absl/strings/string_view.h"

namespace traind {

enum class RpcScope {
  kAnyCaller,      // any authenticated caller; nothing in it belongs to anyone
  kOwnResources,   // any caller, on the jobs, sweeps and uploads it owns (admins: on all)
  kAdminToChange,  // any caller may read; only admins may change
  kAdmin,          // admins only
};

struct RpcPolicy {
  const char* method;  // e.g. "SubmitJob"
  RpcScope scope;
};

const std::vector<RpcPolicy>& RpcPolicies();
// Null for a method that has no row.
const RpcPolicy* FindRpcPolicy(absl::string_view method);

}  // namespace traind

#endif  // TRAIND_SERVER_RPC_POLICY_H_
