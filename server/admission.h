// Admission: what a caller may ask of this traind, decided before anything is stored. A submitted
// (or retried, or swept, or peer-reserved) spec is completed and checked here: defaults, the hosts
// a job names, the device it may have, and every file it names (an upload the caller owns, a job
// the caller may read, a path under a data root, opened beneath it so that a symlink cannot lead
// out). The ownership rules for jobs, sweeps and uploads live here too. No gRPC: the services call
// it, and admission_test.cc tests every rule without a daemon. Thread-safe (const after
// construction; the store and blob store are).
#ifndef TRAIND_SERVER_ADMISSION_H_
#define TRAIND_SERVER_ADMISSION_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/access_control.h"
#include "server/blob_store.h"
#include "server/store.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class Admission {
 public:
  struct Options {
    // What traind-worker found at start: the devices jobs may ask for.
    trainer::v1::ListDevicesResponse devices;
    // As named and resolved (daemon.cc DataRoots): the only places a job's data path may be.
    std::vector<std::string> data_roots;
    // <state-dir>/jobs. Its parent is the state directory, whose own files (database, tokens,
    // uploads, jobs' files) no job may read by path even where a data root holds it.
    std::string jobs_dir;
    bool enable_fault_injection = false;  // traind --enable-fault-injection: JobSpec.debug
    bool slurm_available = false;         // Slurm's commands and traind-slurm were found
    std::string host_name;                // traind --name: this host, rank 0 of a multi-host job
    std::vector<std::string> peer_names;  // traind --peer: the other hosts a job may name
    // traind --python NAME=PATH: the interpreters a script job may name, by name.
    std::map<std::string, std::string> interpreters;
  };
  Admission(Store* store, BlobStore* blobs, Options options);

  // The spec completed (defaults, hosts from nodes, a device of this machine, files resolved) if
  // `caller` may run it here: INVALID_ARGUMENT naming the field otherwise (PERMISSION_DENIED for a
  // job that is someone else's, FAILED_PRECONDITION for backend slurm without Slurm).
  absl::StatusOr<trainer::v1::JobSpec> PrepareSpec(trainer::v1::JobSpec spec,
                                                   const Caller& caller) const;
  // A job `after` names: it must exist and be `caller`'s (INVALID_ARGUMENT, PERMISSION_DENIED).
  absl::Status CheckDependency(const Caller& caller, int64_t after) const;

  // The job, sweep or blob if `caller` may act on it: PERMISSION_DENIED for someone else's job
  // or sweep; NOT_FOUND for someone else's blob (its digest alone proves nothing).
  absl::StatusOr<trainer::v1::Job> OwnJob(const Caller& caller, int64_t id) const;
  absl::StatusOr<trainer::v1::Sweep> OwnSweep(const Caller& caller, int64_t id) const;
  absl::StatusOr<trainer::v1::Blob> UsableBlob(const Caller& caller,
                                               const std::string& digest) const;

  const Options& options() const { return options_; }

 private:
  // JobSpec.nodes without Slurm becomes hosts (this one and the first peers); then every host
  // named must be this one or a peer.
  absl::Status ResolveHosts(trainer::v1::JobSpec* spec) const;
  // The device of a job on this machine alone (not Slurm, not several hosts): the best one when
  // unnamed, "cuda" as cuda:0, GPUs that exist, and an amp dtype the device supports.
  absl::Status ResolveDevice(trainer::v1::JobSpec* spec) const;
  // model_file, init_from, data_file, data_dir: uploads and jobs `caller` may use, paths under a
  // data root (recorded resolved).
  absl::Status ResolveFiles(trainer::v1::JobSpec* spec, const Caller& caller) const;
  absl::Status ResolveInitFrom(trainer::v1::JobSpec* spec, const Caller& caller) const;
  // A script job (admission_script.cc): `caller` may run code, the interpreter is allowed, and
  // every file is an upload `caller` may use.
  absl::Status CheckScript(const trainer::v1::JobSpec& spec, const Caller& caller) const;
  // The resolved path of `path` (a directory, or a regular file) if it lies under a data root,
  // by name and without a symlink or `..` leading out; INVALID_ARGUMENT naming `field`, with one
  // message for every path outside the roots, there or not, that lists the roots to local
  // callers only.
  absl::StatusOr<std::string> UnderDataRoot(const char* field, const std::string& path,
                                            bool directory, const Caller& caller) const;
  // Whether `resolved` is one of traind's own files in its state directory (database, tokens,
  // uploads, jobs' files, cache).
  bool IsDaemonsOwn(const std::string& resolved) const;

  Store* const store_;
  BlobStore* const blobs_;
  const Options options_;
};

}  // namespace traind

#endif  // TRAIND_SERVER_ADMISSION_H_
