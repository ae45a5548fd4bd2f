// TaskService: what a job's launcher (traind-slurm) serves to the job's tasks on the Slurm nodes.
// It hands each task the job's WorkerRequest, passes their events on to traind (the launcher's
// stdout, read by traind as a worker's) and keeps how each task's worker ended. Every call must
// carry the job's secret; anything else is refused before it is read. Thread-safe.
#ifndef TRAIND_SLURM_TASK_SERVICE_H_
#define TRAIND_SLURM_TASK_SERVICE_H_

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "supervise/rank_events.h"
#include "supervise/shared_event_pipe.h"
#include "trainer/v1/slurm.grpc.pb.h"

namespace traind {

class TaskService final : public trainer::v1::SlurmTasks::Service {
 public:
  // `events`: where the job's events go (outlives the service).
  TaskService(trainer::v1::WorkerRequest request, std::string secret, int tasks,
              SharedEventPipe* events);

  grpc::Status Join(grpc::ServerContext* context, const trainer::v1::JoinRequest* request,
                    trainer::v1::WorkerRequest* response) override;
  grpc::Status Report(grpc::ServerContext* context,
                      grpc::ServerReader<trainer::v1::TaskReport>* reader,
                      trainer::v1::TaskReportAck* response) override;

  // Waits until every task has reported how it ended, or `deadline`; whether all have.
  bool AwaitAllEnded(absl::Time deadline);
  std::map<int, trainer::v1::ProcessExit> Ended();
  // Whether rank 0 sent the job's result (a final result or a benchmark's).
  bool GotResult();
  // The first error a worker reported ("rank 1: ..."), or "".
  std::string FirstError();

 private:
  bool Authorized(const grpc::ServerContext& context) const;

  const trainer::v1::WorkerRequest request_;
  const std::string secret_;
  const int tasks_;
  absl::Mutex mu_;
  SharedEventPipe* const events_;  // thread-safe itself
  std::map<int, trainer::v1::ProcessExit> ended_ ABSL_GUARDED_BY(mu_);
  RankEvents events_seen_ ABSL_GUARDED_BY(mu_);
};

}  // namespace traind

#endif  // TRAIND_SLURM_TASK_SERVICE_H_
