// RemoteHost: one peer traind's part in a job on several hosts, as its coordinator's launcher
// (traind-hosts) sees it: reserve its devices (phase one), release them if the job cannot start
// everywhere, send it the job's checkpoint, then run its ranks (phase two) and relay their
// events, as they come, to the job's event stream. Each call has a deadline; the RunRanks stream
// has none, but its channel's keepalive notices a host that went away.
#ifndef TRAIND_HOSTS_REMOTE_HOST_H_
#define TRAIND_HOSTS_REMOTE_HOST_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "trainer/v1/peers.grpc.pb.h"

namespace traind {

class RemoteHost {
 public:
  RemoteHost(std::string name, std::shared_ptr<grpc::Channel> channel);
  // Releases a reservation nothing claimed (whatever path the launcher left by), cancels a
  // running stream and joins its thread.
  ~RemoteHost();

  const std::string& name() const { return name_; }

  // Phase one. The status says why not (UNAVAILABLE: not reachable; RESOURCE_EXHAUSTED: busy;
  // others: the host refuses the job itself).
  absl::Status Reserve(const trainer::v1::ReserveRequest& request, absl::Duration timeout);
  const trainer::v1::Reservation& reservation() const { return reservation_; }
  // Drops a reservation that will not run (best effort: its lease ends it anyway).
  void Release();
  // The checkpoint file, in 1 MiB chunks, before RunRanks.
  absl::Status PutCheckpoint(const std::string& path);

  // Phase two: starts a thread that runs the ranks and hands each report to `on_report` (from
  // that thread), then calls `on_end` with how the call ended (OK: the ranks all reported) and
  // whether this side cancelled it (Cancel): any other end that is not OK means the host went
  // away, shut down or gave up on the ranks.
  void Run(trainer::v1::RunRanksRequest request,
           std::function<void(const trainer::v1::RankReport&)> on_report,
           std::function<void(const grpc::Status&, bool cancelled_here)> on_end);
  // Stops its ranks: cancels the call (the peer terminates them).
  void Cancel();

 private:
  const std::string name_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<trainer::v1::Peers::Stub> stub_;
  trainer::v1::Reservation reservation_;
  bool reserved_ = false;
  absl::Mutex mu_;
  grpc::ClientContext* running_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace traind

#endif  // TRAIND_HOSTS_REMOTE_HOST_H_
