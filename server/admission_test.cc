// Every admission rule (server/admission.h), without a daemon: a real store and blob store in a
// temporary directory, devices as the worker would list them, data roots with real files.
#include "server/admission.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "common/temp_dir_for_tests.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using trainer::v1::Job;
using trainer::v1::JobSpec;

const Caller kAlice{"alice", /*limited=*/true, Role::kUser};
const Caller kBob{"bob", /*limited=*/true, Role::kUser};
const Caller kAdmin{"root", /*limited=*/true, Role::kAdmin};
const Caller kLocal{"local", /*limited=*/false, Role::kAdmin};

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

class AdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mkdir((temp_ / "state").c_str(), 0700), 0);
    ASSERT_EQ(mkdir((temp_ / "state/jobs").c_str(), 0700), 0);
    ASSERT_EQ(mkdir((temp_ / "data").c_str(), 0700), 0);
    ASSERT_EQ(mkdir((temp_ / "data/fmnist").c_str(), 0700), 0);
    ASSERT_EQ(mkdir((temp_ / "outside").c_str(), 0700), 0);
    WriteFile(temp_ / "data/table.csv", "x,label\n1,0\n");
    WriteFile(temp_ / "outside/secret.csv", "x,label\n1,0\n");
    auto store = Store::Open(temp_ / "state/traind.db");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    auto blobs = BlobStore::Open(temp_ / "state/blobs");
    ASSERT_TRUE(blobs.ok()) << blobs.status();
    blobs_ = *std::move(blobs);
    options_.data_roots = {temp_ / "data"};
    options_.jobs_dir = temp_ / "state/jobs";
    options_.host_name = "a";
    options_.peer_names = {"b", "c"};
    AddDevice("cpu", {"bf16"});
  }

  void AddDevice(const std::string& name, std::vector<std::string> amp) {
    trainer::v1::Device* device = options_.devices.add_devices();
    device->set_name(name);
    for (const std::string& dtype : amp) device->add_amp_dtypes(dtype);
  }

  // Built on first use, so that a test may change options_ first.
  const Admission& admission() {
    if (admission_ == nullptr) {
      admission_ = std::make_unique<Admission>(store_.get(), blobs_.get(), options_);
    }
    return *admission_;
  }

  static JobSpec Spec(const std::string& dataset = "fake") {
    JobSpec spec;
    spec.set_model("lenet5");
    spec.set_dataset(dataset);
    return spec;
  }
  JobSpec CsvSpec(const std::string& path) {
    JobSpec spec = Spec("csv");
    spec.set_model("mlp");
    spec.set_data_file(path);
    return spec;
  }

  // An upload of `content` by `owner`, committed; its digest.
  std::string Upload(const std::string& content, const std::string& kind,
                     const std::string& owner) {
    Sha256 hash;
    hash.Update(content);
    trainer::v1::BlobHeader header;
    header.set_digest(absl::StrCat("sha256:", hash.HexDigest()));
    header.set_size_bytes(static_cast<int64_t>(content.size()));
    header.set_kind(kind);
    header.set_name("upload");
    auto upload = blobs_->BeginUpload(header, 1 << 20, owner);
    EXPECT_TRUE(upload.ok()) << upload.status();
    EXPECT_TRUE((*upload)->Append(content).ok());
    EXPECT_TRUE((*upload)->Verify().ok());
    EXPECT_TRUE((*upload)->Commit(kind).ok());
    return header.digest();
  }

  // A job of `owner`'s in the store, with a "best" artifact when `with_best`; a program's job
  // (JobSpec.script) when `script`.
  int64_t AddJob(const std::string& owner, bool with_best, bool script = false) {
    Job job;
    job.set_owner(owner);
    *job.mutable_spec() = Spec();
    if (script) {
      job.mutable_spec()->clear_model();
      job.mutable_spec()->mutable_script()->add_args("train.py");
    }
    auto created = store_->CreateJob(job);
    EXPECT_TRUE(created.ok()) << created.status();
    if (with_best) {
      trainer::v1::JobEvent event;
      event.mutable_artifact()->set_name("best");
      EXPECT_TRUE(store_->AppendEvent(created->id(), event).ok());
    }
    return created->id();
  }

  TempDirForTests temp_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<BlobStore> blobs_;
  Admission::Options options_;
  std::unique_ptr<Admission> admission_;
};

absl::StatusCode CodeOf(const absl::StatusOr<JobSpec>& s) { return s.status().code(); }
std::string MessageOf(const absl::StatusOr<JobSpec>& s) {
  return std::string(s.status().message());
}

// --- Defaults and the spec's own rules ---

TEST_F(AdmissionTest, ASpecGetsItsDefaultsAndTheBestDevice) {
  auto prepared = admission().PrepareSpec(Spec(), kAlice);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->device(), "cpu");
  EXPECT_GT(prepared->epochs(), 0);
  EXPECT_GT(prepared->batch_size(), 0);
}

TEST_F(AdmissionTest, AFieldOutOfItsRangeIsRefusedByName) {
  JobSpec spec = Spec();
  spec.set_batch_size(-3);
  auto prepared = admission().PrepareSpec(spec, kAlice);
  EXPECT_EQ(CodeOf(prepared), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(prepared), HasSubstr("batch_size"));
}

TEST_F(AdmissionTest, FaultInjectionNeedsTheDaemonsFlag) {
  JobSpec spec = Spec();
  spec.mutable_debug()->set_step_delay_ms(1);
  auto refused = admission().PrepareSpec(spec, kAlice);
  EXPECT_EQ(CodeOf(refused), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(refused), HasSubstr("--enable-fault-injection"));
  options_.enable_fault_injection = true;
  admission_.reset();
  EXPECT_TRUE(admission().PrepareSpec(spec, kAlice).ok());
}

TEST_F(AdmissionTest, SlurmNeedsSlurmsCommands) {
  JobSpec spec = Spec();
  spec.set_device("cpu");  // the nodes' device: cpu or cuda
  spec.set_backend("slurm");
  auto refused = admission().PrepareSpec(spec, kAlice);
  EXPECT_EQ(CodeOf(refused), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(MessageOf(refused), HasSubstr("sbatch"));
  options_.slurm_available = true;
  admission_.reset();
  auto admitted = admission().PrepareSpec(spec, kAlice);
  EXPECT_TRUE(admitted.ok()) << admitted.status();
}

// --- Hosts ---

TEST_F(AdmissionTest, NodesBecomeThisHostAndTheFirstPeers) {
  JobSpec spec = Spec();
  spec.set_device("cpu");  // every host's: cpu or cuda
  spec.set_nodes(2);
  auto prepared = admission().PrepareSpec(spec, kAlice);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->hosts(), "a,b");
  EXPECT_EQ(prepared->nodes(), 0);
}

TEST_F(AdmissionTest, NodesBeyondThePeersAreRefusedNamingThem) {
  JobSpec spec = Spec();
  spec.set_nodes(4);
  auto refused = admission().PrepareSpec(spec, kAlice);
  EXPECT_EQ(CodeOf(refused), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(refused), HasSubstr("nodes: 1 to 3"));
  EXPECT_THAT(MessageOf(refused), HasSubstr("b, c"));
}

TEST_F(AdmissionTest, NodesAndHostsTogetherAreRefused) {
  JobSpec spec = Spec();
  spec.set_nodes(2);
  spec.set_hosts("a,b");
  EXPECT_THAT(MessageOf(admission().PrepareSpec(spec, kAlice)),
              HasSubstr("give hosts or nodes, not both"));
}

TEST_F(AdmissionTest, HostsMustIncludeThisOneAndOnlyPeers) {
  JobSpec spec = Spec();
  spec.set_device("cpu");
  spec.set_hosts("b,c");
  EXPECT_THAT(MessageOf(admission().PrepareSpec(spec, kAlice)), HasSubstr("must include this"));
  spec.set_hosts("a,z");
  EXPECT_THAT(MessageOf(admission().PrepareSpec(spec, kAlice)),
              HasSubstr("'z' is not a peer of this traind"));
  spec.set_hosts("a,c");
  EXPECT_TRUE(admission().PrepareSpec(spec, kAlice).ok());
}

TEST_F(AdmissionTest, HostsOnCudaNeedAGpuHere) {
  JobSpec spec = Spec();
  spec.set_hosts("a,b");
  spec.set_device("cuda");
  EXPECT_THAT(MessageOf(admission().PrepareSpec(spec, kAlice)),
              HasSubstr("this machine has no GPU"));
}

// --- Devices ---

TEST_F(AdmissionTest, ADeviceThisMachineLacksIsRefusedListingTheOthers) {
  JobSpec spec = Spec();
  spec.set_device("cuda:3");
  auto refused = admission().PrepareSpec(spec, kAlice);
  EXPECT_EQ(CodeOf(refused), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(refused), HasSubstr("available: cpu"));
}

TEST_F(AdmissionTest, CudaMeansTheFirstGpu) {
  AddDevice("cuda:0", {"bf16", "fp16"});
  AddDevice("cuda:1", {"bf16", "fp16"});
  JobSpec spec = Spec();
  spec.set_device("cuda");
  auto prepared = admission().PrepareSpec(spec, kAlice);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->device(), "cuda:0");
}

TEST_F(AdmissionTest, GpusMustExist) {
  AddDevice("cuda:0", {"bf16"});
  JobSpec spec = Spec();
  spec.set_gpus(2);
  auto refused = admission().PrepareSpec(spec, kAlice);
  EXPECT_EQ(CodeOf(refused), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(refused), HasSubstr("gpus"));
  spec.set_gpus(1);
  EXPECT_TRUE(admission().PrepareSpec(spec, kAlice).ok());
}

TEST_F(AdmissionTest, AnAmpDtypeTheDeviceLacksIsRefused) {
  JobSpec spec = Spec();
  spec.set_amp("fp16");
  auto refused = admission().PrepareSpec(spec, kAlice);
  EXPECT_EQ(CodeOf(refused), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(refused), HasSubstr("amp: fp16 is not supported on cpu; supported: bf16"));
  spec.set_amp("bf16");
  EXPECT_TRUE(admission().PrepareSpec(spec, kAlice).ok());
}

// --- Data paths: under a root, opened beneath it, and nothing said of what is outside ---

TEST_F(AdmissionTest, AFileUnderARootIsRecordedResolved) {
  auto prepared = admission().PrepareSpec(CsvSpec(temp_ / "data/../data/table.csv"), kAlice);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->data_file(), temp_ / "data/table.csv");
}

TEST_F(AdmissionTest, APathOutsideTheRootsGetsOneAnswerWhetherItExistsOrNot) {
  auto there = admission().PrepareSpec(CsvSpec(temp_ / "outside/secret.csv"), kAlice);
  auto absent = admission().PrepareSpec(CsvSpec(temp_ / "outside/absent.csv"), kAlice);
  EXPECT_EQ(CodeOf(there), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MessageOf(there), absl::StrCat("data_file: ", temp_ / "outside/secret.csv",
                                           " is outside the daemon's data roots; ask its operator "
                                           "for a data root (traind --data-root), or upload it "
                                           "(trainctl --upload)"));
  EXPECT_EQ(MessageOf(absent), absl::StrCat("data_file: ", temp_ / "outside/absent.csv",
                                            " is outside the daemon's data roots; ask its "
                                            "operator for a data root (traind --data-root), or "
                                            "upload it (trainctl --upload)"));
}

TEST_F(AdmissionTest, OnlyALocalCallerIsToldWhereTheRootsAre) {
  const std::string path = temp_ / "outside/secret.csv";
  EXPECT_THAT(MessageOf(admission().PrepareSpec(CsvSpec(path), kAlice)),
              Not(HasSubstr(temp_ / "data")));
  EXPECT_THAT(MessageOf(admission().PrepareSpec(CsvSpec(path), kAdmin)),
              Not(HasSubstr(temp_ / "data")));
  EXPECT_THAT(MessageOf(admission().PrepareSpec(CsvSpec(path), kLocal)),
              HasSubstr(absl::StrCat("(", temp_ / "data", ")")));
}

TEST_F(AdmissionTest, ASymlinkInsideARootThatLeadsOutIsOutside) {
  ASSERT_EQ(symlink((temp_ / "outside/secret.csv").c_str(), (temp_ / "data/link.csv").c_str()), 0);
  ASSERT_EQ(symlink((temp_ / "outside").c_str(), (temp_ / "data/fmnist/escape").c_str()), 0);
  EXPECT_THAT(MessageOf(admission().PrepareSpec(CsvSpec(temp_ / "data/link.csv"), kAlice)),
              HasSubstr("is outside the daemon's data roots"));
  JobSpec dir = Spec("fashion-mnist");
  dir.set_data_dir(temp_ / "data/fmnist/escape");
  EXPECT_THAT(MessageOf(admission().PrepareSpec(dir, kAlice)),
              HasSubstr("is outside the daemon's data roots"));
}

TEST_F(AdmissionTest, DotDotThatClimbsOutIsOutside) {
  EXPECT_THAT(
      MessageOf(admission().PrepareSpec(CsvSpec(temp_ / "data/../outside/secret.csv"), kAlice)),
      HasSubstr("is outside the daemon's data roots"));
}

TEST_F(AdmissionTest, AMissingPathInsideARootIsNamed) {
  EXPECT_THAT(MessageOf(admission().PrepareSpec(CsvSpec(temp_ / "data/absent.csv"), kAlice)),
              HasSubstr("no such file or directory on the daemon's machine"));
}

TEST_F(AdmissionTest, ADataFileMustBeARegularFileAndADataDirADirectory) {
  EXPECT_THAT(MessageOf(admission().PrepareSpec(CsvSpec(temp_ / "data/fmnist"), kAlice)),
              HasSubstr("is not a regular file"));
  JobSpec dir = Spec("fashion-mnist");
  dir.set_data_dir(temp_ / "data/table.csv");
  EXPECT_EQ(CodeOf(admission().PrepareSpec(dir, kAlice)), absl::StatusCode::kInvalidArgument);
  dir.set_data_dir(temp_ / "data/fmnist");
  auto prepared = admission().PrepareSpec(dir, kAlice);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->data_dir(), temp_ / "data/fmnist");
}

TEST_F(AdmissionTest, RelativePathsAreRefused) {
  EXPECT_THAT(MessageOf(admission().PrepareSpec(CsvSpec("data/table.csv"), kAlice)),
              HasSubstr("data_file: must be an absolute path"));
}

TEST_F(AdmissionTest, TheDaemonsOwnFilesAreOutsideEvenUnderARoot) {
  options_.data_roots = {temp_.path()};  // a root that holds the state directory
  WriteFile(temp_ / "state/jobs/x.csv", "x,label\n1,0\n");
  WriteFile(temp_ / "state/traind.tokens", "secret");
  WriteFile(temp_ / "state/mine.csv", "x,label\n1,0\n");
  EXPECT_THAT(MessageOf(admission().PrepareSpec(CsvSpec(temp_ / "state/jobs/x.csv"), kAlice)),
              HasSubstr("is outside the daemon's data roots"));
  EXPECT_THAT(MessageOf(admission().PrepareSpec(CsvSpec(temp_ / "state/traind.tokens"), kAlice)),
              HasSubstr("is outside the daemon's data roots"));
  EXPECT_TRUE(admission().PrepareSpec(CsvSpec(temp_ / "state/mine.csv"), kAlice).ok());
}

TEST_F(AdmissionTest, NoRootsMeansNoPaths) {
  options_.data_roots.clear();
  EXPECT_THAT(MessageOf(admission().PrepareSpec(CsvSpec(temp_ / "data/table.csv"), kAlice)),
              HasSubstr("is outside the daemon's data roots"));
}

// --- Uploads and jobs a spec names ---

TEST_F(AdmissionTest, AnUploadedDataFileMustBeTheCallersUpload) {
  const std::string digest = Upload("x,label\n1,0\n", "data", "alice");
  EXPECT_TRUE(admission().PrepareSpec(CsvSpec(digest), kAlice).ok());
  EXPECT_TRUE(admission().PrepareSpec(CsvSpec(digest), kAdmin).ok());
  auto bobs = admission().PrepareSpec(CsvSpec(digest), kBob);
  EXPECT_EQ(CodeOf(bobs), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(bobs), HasSubstr("is not stored on this daemon"));
}

TEST_F(AdmissionTest, AModelFileMustBeAnUploadedModel) {
  const std::string data = Upload("not a model", "data", "alice");
  const std::string model = Upload("a model", "model", "alice");
  JobSpec spec = Spec();
  spec.set_model("torchscript");
  spec.set_model_file(data);
  EXPECT_THAT(MessageOf(admission().PrepareSpec(spec, kAlice)),
              HasSubstr("was uploaded as data, not a model"));
  spec.set_model_file(model);
  EXPECT_TRUE(admission().PrepareSpec(spec, kAlice).ok());
  EXPECT_THAT(MessageOf(admission().PrepareSpec(spec, kBob)),
              HasSubstr("is not stored on this daemon"));
}

TEST_F(AdmissionTest, InitFromAJobNeedsItsWeightsAndItsOwner) {
  const int64_t with_best = AddJob("alice", /*with_best=*/true);
  const int64_t without = AddJob("alice", /*with_best=*/false);
  JobSpec spec = Spec();
  spec.set_init_from(absl::StrCat(with_best));
  auto prepared = admission().PrepareSpec(spec, kAlice);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->init_from(), absl::StrCat(with_best, ":best"));  // made explicit
  EXPECT_EQ(CodeOf(admission().PrepareSpec(spec, kBob)), absl::StatusCode::kPermissionDenied);
  spec.set_init_from(absl::StrCat(without));
  EXPECT_THAT(MessageOf(admission().PrepareSpec(spec, kAlice)), HasSubstr("has no best weights"));
  spec.set_init_from("9999");
  EXPECT_THAT(MessageOf(admission().PrepareSpec(spec, kAlice)),
              HasSubstr("init_from: job 9999 not found"));
}

TEST_F(AdmissionTest, InitFromAProgramsJobIsRefusedEvenWithAFileNamedBest) {
  const int64_t program = AddJob("alice", /*with_best=*/true, /*script=*/true);
  JobSpec spec = Spec();
  spec.set_init_from(absl::StrCat(program));
  EXPECT_THAT(MessageOf(admission().PrepareSpec(spec, kAlice)),
              HasSubstr("ran a program: its files are not weights"));
}

TEST_F(AdmissionTest, InitFromAnUploadMustBeTheCallers) {
  const std::string weights = Upload("weights", "weights", "alice");
  JobSpec spec = Spec();
  spec.set_init_from(weights);
  EXPECT_TRUE(admission().PrepareSpec(spec, kAlice).ok());
  EXPECT_THAT(MessageOf(admission().PrepareSpec(spec, kBob)),
              HasSubstr("is not stored on this daemon"));
}

TEST_F(AdmissionTest, AMatmulBenchmarkNeedsNoFiles) {
  JobSpec spec;
  spec.mutable_benchmark()->set_kind("matmul");
  auto prepared = admission().PrepareSpec(spec, kAlice);
  EXPECT_TRUE(prepared.ok()) << prepared.status();
}

// --- Who may act on what ---

TEST_F(AdmissionTest, DependenciesMustExistAndBeTheCallers) {
  const int64_t alices = AddJob("alice", false);
  EXPECT_TRUE(admission().CheckDependency(kAlice, alices).ok());
  EXPECT_EQ(admission().CheckDependency(kBob, alices).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(admission().CheckDependency(kAdmin, alices).ok());
  EXPECT_EQ(admission().CheckDependency(kAlice, 9999).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(AdmissionTest, SomeoneElsesJobIsDeniedAndSomeoneElsesUploadIsAbsent) {
  const int64_t alices = AddJob("alice", false);
  EXPECT_TRUE(admission().OwnJob(kAlice, alices).ok());
  EXPECT_EQ(admission().OwnJob(kBob, alices).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(admission().OwnJob(kAlice, 9999).status().code(), absl::StatusCode::kNotFound);
  const std::string digest = Upload("bytes", "data", "alice");
  EXPECT_TRUE(admission().UsableBlob(kAlice, digest).ok());
  EXPECT_TRUE(admission().UsableBlob(kAdmin, digest).ok());
  EXPECT_EQ(admission().UsableBlob(kBob, digest).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(AdmissionTest, ASweepIsItsOwners) {
  Job member;
  member.set_owner("alice");
  *member.mutable_spec() = Spec();
  trainer::v1::SweepSpec sweep_spec;
  auto sweep = store_->CreateSweep(sweep_spec, {member});
  ASSERT_TRUE(sweep.ok()) << sweep.status();
  EXPECT_TRUE(admission().OwnSweep(kAlice, sweep->id()).ok());
  EXPECT_EQ(admission().OwnSweep(kBob, sweep->id()).status().code(),
            absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace traind
