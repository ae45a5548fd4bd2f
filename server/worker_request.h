// What a job's worker is told (WorkerRequest): the spec, where its directory, model, data and
// initial weights are, the program's interpreter, limits and sandbox, the data roots it may read
// beneath and how often it checkpoints. The one place a job becomes a request: the scheduler's
// jobs and PeerService's ranks (a peer's part of a job on several hosts) both build it here, each
// with its own host's paths. Pure apart from RequestFor creating the job's directory.
#ifndef TRAIND_SERVER_WORKER_REQUEST_H_
#define TRAIND_SERVER_WORKER_REQUEST_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/blob_store.h"
#include "trainer/v1/trainer.pb.h"
#include "trainer/v1/worker.pb.h"

namespace traind {

// This host's side of every request.
struct WorkerRequestOptions {
  const BlobStore* blobs = nullptr;  // where model_file / data_file / script digests live
  // The interpreters a script job may name (traind --python NAME=PATH).
  std::map<std::string, std::string> interpreters;
  // What each process of a program may use (traind --script-memory-limit,
  // --script-file-size-limit); 0: no limit.
  int64_t script_memory_bytes = 0;
  int64_t script_file_size_bytes = 0;
  // How a program is confined (traind --script-sandbox); bwrap_path empty: not at all.
  trainer::v1::ProgramSandbox script_sandbox;
  // Beneath which workers open a job's data; empty: unconfined (tests only).
  std::vector<std::string> data_roots;
  double checkpoint_interval_seconds = 600;  // 0: the spec's only
  // Where a job named by init_from ("job:ID/ARTIFACT") keeps its artifacts: <jobs_dir>/<ID>/.
  std::string jobs_dir;
};

// `job`'s request, its directory `job_dir`.
trainer::v1::WorkerRequest BuildWorkerRequest(const trainer::v1::Job& job,
                                              const std::string& job_dir,
                                              const WorkerRequestOptions& options);

// BuildWorkerRequest for <options.jobs_dir>/<job id>, which it creates (INTERNAL when it cannot)
// and clears of a killed run's half-written temporary files.
absl::StatusOr<trainer::v1::WorkerRequest> RequestFor(const trainer::v1::Job& job,
                                                      const WorkerRequestOptions& options);

}  // namespace traind

#endif  // TRAIND_SERVER_WORKER_REQUEST_H_
