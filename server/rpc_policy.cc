#include "server/rpc_policy.h"

namespace traind {

const std::vector<RpcPolicy>& RpcPolicies() {
  static const std::vector<RpcPolicy>* const policies = new std::vector<RpcPolicy>{
      {"SubmitJob", RpcScope::kOwnResources},  // `after`, init_from and blobs must be its own
      {"GetJob", RpcScope::kOwnResources},
      {"ListJobs", RpcScope::kOwnResources},  // a user token lists its own jobs only
      {"CancelJob", RpcScope::kOwnResources},
      {"WatchJob", RpcScope::kOwnResources},
      {"ListJobEvents", RpcScope::kOwnResources},
      {"ListDevices", RpcScope::kAnyCaller},
      {"RetryJob", RpcScope::kOwnResources},
      {"SubmitSweep", RpcScope::kOwnResources},
      {"GetSweep", RpcScope::kOwnResources},
      {"CancelSweep", RpcScope::kOwnResources},
      {"ExtendSearch", RpcScope::kOwnResources},
      {"ListSweeps", RpcScope::kOwnResources},  // a user token lists its own sweeps only
      {"GetSweepReport", RpcScope::kOwnResources},
      {"SetQueueState", RpcScope::kAdminToChange},  // GET for all; PAUSE, RESUME, DRAIN: admins
      {"UploadBlob", RpcScope::kOwnResources},      // counted against its storage quota
      {"GetBlob", RpcScope::kOwnResources},         // only blobs it uploaded itself
      {"ListArtifacts", RpcScope::kOwnResources},
      {"DownloadArtifact", RpcScope::kOwnResources},
      {"DeleteJob", RpcScope::kOwnResources},
      {"Shutdown", RpcScope::kAdmin},
      {"SetJobPriority", RpcScope::kOwnResources},
      // trainer.v1.Peers: another traind running a job's ranks on this machine's devices.
      {"Peers.Reserve", RpcScope::kAdmin},
      {"Peers.Release", RpcScope::kAdmin},
      {"Peers.PutCheckpoint", RpcScope::kAdmin},
      {"Peers.RunRanks", RpcScope::kAdmin},
  };
  return *policies;
}

const RpcPolicy* FindRpcPolicy(absl::string_view method) {
  for (const RpcPolicy& policy : RpcPolicies()) {
    if (method == policy.method) return &policy;
  }
  return nullptr;
}

}  // namespace traind
