// What a valid JobSpec is: the catalog of models, datasets and optimizers, the defaults of every
// option, and validation with messages that name the field and the allowed values. Shared by
// trainctl (early, friendly errors) and traind (the authority). Pure functions; thread-safe.
#ifndef TRAIND_COMMON_JOB_SPEC_H_
#define TRAIND_COMMON_JOB_SPEC_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// Models and datasets: common/catalog.h.
const std::vector<std::string>& KnownOptimizers();
const std::vector<std::string>& KnownAmpModes();      // bf16, fp16
const std::vector<std::string>& KnownMatmulDtypes();  // bf16, fp16, fp32, tf32

// Defaults of the reference scripts (rasbt's M1 benchmarks).
inline constexpr int kDefaultEpochs = 1;
inline constexpr int kDefaultBatchSize = 128;
inline constexpr double kDefaultLearningRate = 1e-3;
inline constexpr char kDefaultOptimizer[] = "adam";
inline constexpr unsigned kDefaultSeed = 123;
inline constexpr int kDefaultLogEvery = 100;
inline constexpr int kMaxEpochs = 100000;
inline constexpr int kMaxProcesses = 64;  // ranks of a data-parallel job

// Fills every unset field with its default. Leaves device and data_dir alone: those depend on the
// daemon's machine and are resolved there.
void ApplyDefaults(trainer::v1::JobSpec* spec);

// INVALID_ARGUMENT naming the first bad field, e.g.
// "model: unknown model 'nosuch'; allowed: lenet5, mlp". Call after ApplyDefaults. Every number
// is held to its range in common/spec_ranges.h first ("batch_size: must be 1 to 1048576, got
// 2000000"); options the chosen optimizer or benchmark kind would ignore (momentum with adam,
// benchmark.steps with matmul) are refused, not dropped.
absl::Status ValidateJobSpec(const trainer::v1::JobSpec& spec);
// The largest spec a job may have (3 MiB): ValidateJobSpec refuses more.
inline constexpr size_t kMaxSpecBytes = 3 << 20;

// "cpu", "mps", "cuda" or "cuda:N". Availability is the daemon's business.
absl::Status ValidateDeviceName(const std::string& device);
// Whether a (valid) device name is a GPU's: "cuda" or "cuda:N" (admission stores the latter).
bool IsCudaDevice(const std::string& device);

// JobSpec.devices ("cuda:0,cuda:1") as names, in order; INVALID_ARGUMENT naming devices when an
// entry is no "cuda:N", is repeated, or there are more than kMaxProcesses. Empty: none.
absl::StatusOr<std::vector<std::string>> ParseDeviceList(const std::string& devices);

// A job's ranks (worker processes): gpus, the devices listed, or processes; at least 1.
int RankCount(const trainer::v1::JobSpec& spec);
// Whether the job runs on a Slurm cluster (backend slurm) rather than this machine's devices.
bool IsSlurmJob(const trainer::v1::JobSpec& spec);

// Several traind hosts (JobSpec.hosts): the host names in rank order, empty for any other job.
std::vector<std::string> HostNames(const trainer::v1::JobSpec& spec);
// The ranks each host of such a job runs (RankCount / hosts).
int RanksPerHost(const trainer::v1::JobSpec& spec);
// Characters a host name (traind --name, --peer NAME=...) may have: INVALID_ARGUMENT naming
// `field` otherwise.
absl::Status ValidateHostName(const char* field, const std::string& name);

// "sha256:" and 64 lowercase hex digits: how a spec names an uploaded blob.
absl::Status ValidateBlobDigest(const char* field, const std::string& digest);

// JobSpec.init_from: another job's artifact ("7", "7:best", "7:final") or an uploaded blob.
struct InitFrom {
  int64_t job_id = 0;            // set for a job's artifact
  std::string artifact;          // best (default) or final
  std::string digest;            // set for a blob: "sha256:..."
  std::string Describe() const;  // "job 7's best weights" / "the uploaded weights sha256:1234abcd"
};
// INVALID_ARGUMENT naming init_from and the accepted forms.
absl::StatusOr<InitFrom> ParseInitFrom(const std::string& text);

// Parses a job file: JSON (protobuf's JSON mapping of JobSpec, lowerCamelCase or field names).
absl::Status ParseJobSpecJson(const std::string& text, trainer::v1::JobSpec* spec);

}  // namespace traind

#endif  // TRAIND_COMMON_JOB_SPEC_H_
