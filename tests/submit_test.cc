// trainctl submit against a real daemon: the happy path and every kind of bad input.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/paths.h"
#include "google/protobuf/util/json_util.h"
#include "tests/daemon_fixture.h"

namespace traind {
namespace {

using trainer::v1::Job;

class SubmitTest : public DaemonTest {
 protected:
  int JobCount() {
    Result list = Trainctl({"list", "--all", "--output", "json"});
    EXPECT_EQ(list.exit_code, 0) << list.err;
    trainer::v1::ListJobsResponse response;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(list.out, &response).ok());
    return response.jobs_size();
  }
  // Submits `args`, expects exit code 2 with `message` in stderr, and nothing stored.
  void ExpectRefused(const std::vector<std::string>& args, const std::string& message) {
    const int before = JobCount();
    std::vector<std::string> full = {"submit"};
    full.insert(full.end(), args.begin(), args.end());
    Result result = Trainctl(full);
    EXPECT_EQ(result.exit_code, 2) << result.out;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_EQ(JobCount(), before);
  }
};

TEST_F(SubmitTest, PrintsTheIdAndStoresTheJobWithDefaults) {
  Result result = Trainctl({"submit", "--model", "lenet5", "--dataset", "fashion-mnist", "--device",
                            "cpu", "--epochs", "1", "--output", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(result.out, &job).ok()) << result.out;
  EXPECT_GT(job.id(), 0);
  EXPECT_EQ(job.spec().batch_size(), 128);
  EXPECT_EQ(job.spec().optimizer(), "adam");
  EXPECT_EQ(job.spec().seed(), 123u);
  EXPECT_EQ(job.spec().data_dir(), DefaultFashionMnistDir());
  EXPECT_EQ(job.state(), Job::QUEUED);
  EXPECT_EQ(result.out.find("\"state\": \"QUEUED\"") != std::string::npos, true);
  Trainctl({"cancel", std::to_string(job.id())});
}

TEST_F(SubmitTest, BestAvailableDeviceIsChosen) {
  Result result =
      Trainctl({"submit", "--model", "mlp", "--dataset", "fashion-mnist", "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(result.out, &job).ok());
  EXPECT_FALSE(job.spec().device().empty());
  Trainctl({"cancel", std::to_string(job.id())});
}

TEST_F(SubmitTest, UnknownModelNamesTheAllowedOnes) {
  ExpectRefused(
      {"--model", "nosuch", "--dataset", "fashion-mnist"},
      "model: unknown value 'nosuch'; allowed: lenet5, mlp, resnet18, vgg16, torchscript");
}

TEST_F(SubmitTest, UnknownDatasetAndDevice) {
  ExpectRefused({"--model", "mlp", "--dataset", "imagenet"},
                "allowed: cifar10, csv, fake, fashion-mnist, imagefolder, mnist, tensors");
  ExpectRefused({"--model", "mlp", "--dataset", "fashion-mnist", "--device", "tpu"},
                "device: unknown device 'tpu'");
  ExpectRefused({"--model", "mlp", "--dataset", "fashion-mnist", "--device", "cuda:3"},
                "device: 'cuda:3' is not available on this machine; available:");
}

TEST_F(SubmitTest, NonPositiveNumbers) {
  ExpectRefused({"--model", "mlp", "--dataset", "fashion-mnist", "--epochs", "0"},
                "epochs: must be 1 to 100000, got 0");
  ExpectRefused({"--model", "mlp", "--dataset", "fashion-mnist", "--batch-size", "-5"},
                "batch_size: must be 1 to 1048576, got -5");
  ExpectRefused({"--model", "mlp", "--dataset", "fashion-mnist", "--lr", "0"},
                "learning_rate: must be greater than 0");
  Result result = Trainctl({"submit", "--model", "mlp", "--epochs", "many"});
  EXPECT_EQ(result.exit_code, 2);
}

TEST_F(SubmitTest, MissingDataDirectory) {
  // Inside a root the caller may learn what is there (outside, see the next test).
  ExpectRefused(
      {"--model", "mlp", "--dataset", "mnist", "--data-dir", state_dir_ + "/no/such/dir"},
      "data_dir: no such directory on the daemon's machine: " + state_dir_ + "/no/such/dir");
  ExpectRefused({"--model", "mlp", "--dataset", "mnist"}, "data_dir: required for dataset 'mnist'");
}

TEST_F(SubmitTest, DataDirOutsideTheRootsIsRefused) {
  const std::string outside = "/tmp/traind-outside-" + std::to_string(getpid());
  WriteTinyIdxDataset(outside, 50, false);
  ExpectRefused({"--model", "mlp", "--dataset", "mnist", "--data-dir", outside},
                "is outside the daemon's data roots");
  // Neither `..` nor a symlink inside a root gets out of it.
  ExpectRefused({"--model", "mlp", "--dataset", "mnist", "--data-dir",
                 state_dir_ + "/../" + outside.substr(5)},
                "is outside the daemon's data roots");
  std::filesystem::create_symlink(outside, state_dir_ + "/escape");
  ExpectRefused({"--model", "mlp", "--dataset", "mnist", "--data-dir", state_dir_ + "/escape"},
                "is outside the daemon's data roots");
  // Nothing tells whether something is there outside: a path that exists and one that does not,
  // directly or through a symlink in a root, get the same message (this caller, local, also
  // learns where the roots are).
  auto refusal = [&](const std::string& data_dir) {
    Result result =
        Trainctl({"submit", "--model", "mlp", "--dataset", "mnist", "--data-dir", data_dir});
    EXPECT_EQ(result.exit_code, 2) << result.err;
    std::string err = result.err;
    err.replace(err.find(data_dir), data_dir.size(), "PATH");
    return err;
  };
  std::filesystem::create_symlink("/no/such/dir", state_dir_ + "/escape-to-nothing");
  const std::string existing = refusal(outside);
  EXPECT_NE(existing.find("(" + state_dir_), std::string::npos) << existing;
  EXPECT_EQ(refusal("/no/such/dir"), existing);
  EXPECT_EQ(refusal(state_dir_ + "/escape"), existing);
  EXPECT_EQ(refusal(state_dir_ + "/escape-to-nothing"), existing);
  EXPECT_EQ(refusal(state_dir_ + "/escape-to-nothing/deeper"), existing);
  std::filesystem::remove_all(outside);
  // The fixture's state directory is a data root: its uploads, jobs' files and database are
  // still not a job's to read by path.
  std::filesystem::create_directories(state_dir_ + "/jobs/1");
  EXPECT_EQ(refusal(state_dir_ + "/jobs/1"), existing);
  Result db = Trainctl(
      {"submit", "--model", "mlp", "--dataset", "csv", "--data-file", state_dir_ + "/traind.db"});
  EXPECT_EQ(db.exit_code, 2);
  EXPECT_NE(db.err.find("is outside the daemon's data roots"), std::string::npos) << db.err;
  // Inside a root is fine.
  const std::string inside = WriteTinyIdxDataset(state_dir_ + "/mnist", 50, false);
  Result ok = Trainctl({"submit", "--model", "mlp", "--dataset", "mnist", "--data-dir", inside,
                        "--device", "cpu", "--batch-size", "8"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// Admission checks the path when the job is submitted; the worker opens it beneath the roots
// again when the job starts, so a directory swapped for a symlink out of the roots while the job
// waited fails the job instead of being read.
TEST_F(SubmitTest, ADataDirSwappedForASymlinkWhileQueuedIsRefusedWhereItIsRead) {
  const std::string inside = WriteTinyIdxDataset(state_dir_ + "/mnist", 50, false);
  const std::string outside = "/tmp/traind-outside-swap-" + std::to_string(getpid());
  WriteTinyIdxDataset(outside, 50, false);
  ASSERT_EQ(Trainctl({"pause"}).exit_code, 0);
  Result submit = Trainctl({"submit", "--model", "mlp", "--dataset", "mnist", "--data-dir", inside,
                            "--device", "cpu", "--batch-size", "8"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const int64_t id = std::stoll(submit.out);
  std::filesystem::rename(inside, inside + ".old");
  std::filesystem::create_symlink(outside, inside);
  ASSERT_EQ(Trainctl({"resume"}).exit_code, 0);
  EXPECT_EQ(Trainctl({"watch", std::to_string(id)}).exit_code, 1);
  const Job job = GetJob(id);
  EXPECT_EQ(job.state(), Job::FAILED);
  EXPECT_NE(
      job.result().error().find("data_dir: " + inside +
                                "/train-images-idx3-ubyte is outside the daemon's data roots"),
      std::string::npos)
      << job.result().error();
  std::filesystem::remove_all(outside);
}

TEST_F(SubmitTest, TheDaemonValidatesToo) {
  // A client in another language may skip trainctl's checks.
  trainer::v1::SubmitJobRequest request;
  request.mutable_spec()->set_model("resnet1000");
  request.mutable_spec()->set_dataset("fashion-mnist");
  Job job;
  grpc::ClientContext context;
  grpc::Status status = stub().SubmitJob(&context, request, &job);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(
      status.error_message(),
      "model: unknown value 'resnet1000'; allowed: lenet5, mlp, resnet18, vgg16, torchscript");
}

TEST_F(SubmitTest, JobFileWithFlagOverrides) {
  const std::string path = state_dir_ + "/job.yaml";
  std::ofstream(path) << "model: lenet5\ndataset: fashion-mnist\nepochs: 4\nbatchSize: 32\n";
  Result result = Trainctl({"submit", path, "--epochs", "2", "--device", "cpu", "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(result.out, &job).ok());
  EXPECT_EQ(job.spec().model(), "lenet5");
  EXPECT_EQ(job.spec().epochs(), 2);
  EXPECT_EQ(job.spec().batch_size(), 32);
  Trainctl({"cancel", std::to_string(job.id())});

  std::ofstream(path) << "model: lenet5\nepoks: 4\n";
  ExpectRefused({path}, "epoks");
}

TEST_F(SubmitTest, UnreachableDaemonIsExitCode3WithAHint) {
  StopDaemon();
  Result result = Trainctl({"submit", "--model", "mlp", "--dataset", "fashion-mnist"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("Start it with"), std::string::npos) << result.err;
  StartDaemon();
}

TEST_F(SubmitTest, EveryPartOfARequestIsBoundedBeforeAnyWork) {
  // The example: 1.2 million `after` ids, under the request size limit.
  trainer::v1::SubmitJobRequest request;
  request.mutable_spec()->set_model("mlp");
  request.mutable_spec()->set_dataset("fake");
  for (int i = 0; i < 1200000; ++i) request.add_after(i + 1);
  trainer::v1::Job job;
  grpc::ClientContext context;
  grpc::Status status = stub().SubmitJob(&context, request, &job);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "after: at most 64 entries, got 1200000");
  // Another: a 3 MB job name, and a list filter of a thousand states.
  request.clear_after();
  request.mutable_spec()->set_name(std::string(3 << 20, 'n'));
  grpc::ClientContext context2;
  status = stub().SubmitJob(&context2, request, &job);
  EXPECT_EQ(status.error_message(), "spec.name: at most 256 bytes, got 3145728");
  trainer::v1::ListJobsRequest list;
  for (int i = 0; i < 1000; ++i) list.add_states(trainer::v1::Job::QUEUED);
  trainer::v1::ListJobsResponse listed;
  grpc::ClientContext context3;
  status = stub().ListJobs(&context3, list, &listed);
  EXPECT_EQ(status.error_message(), "states: at most 64 entries, got 1000");
  // The daemon still answers at once.
  EXPECT_EQ(Trainctl({"list"}).exit_code, 0);
}

TEST_F(SubmitTest, ListingJobsWithLargeFieldsFitsAnyClientsLimit) {
  ASSERT_EQ(Trainctl({"pause"}).exit_code, 0);
  // A data directory with a long (legal) path: 1000 jobs of it are over 4 MB in one page.
  std::string dir = state_dir_;
  while (dir.size() < 3800) dir += "/" + std::string(200, 'd');
  std::filesystem::create_directories(dir);
  for (int i = 0; i < 1000; ++i) {
    trainer::v1::SubmitJobRequest request;
    request.mutable_spec()->set_model("lenet5");
    request.mutable_spec()->set_dataset("fashion-mnist");
    request.mutable_spec()->set_data_dir(dir);
    request.mutable_spec()->set_name(std::string(200, 'n'));
    trainer::v1::Job job;
    grpc::ClientContext context;
    const grpc::Status status = stub().SubmitJob(&context, request, &job);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  // The fixture's stub has gRPC's default 4 MiB receive limit.
  int seen = 0, pages = 0;
  std::string token;
  do {
    trainer::v1::ListJobsRequest request;
    request.set_page_size(1000);
    request.set_page_token(token);
    trainer::v1::ListJobsResponse response;
    grpc::ClientContext context;
    const grpc::Status status = stub().ListJobs(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    seen += response.jobs_size();
    token = response.next_page_token();
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(seen, 1000);
  EXPECT_GE(pages, 2);
}

TEST_F(SubmitTest, UserTextCannotForgeRowsOrDriveTheTerminal) {
  ASSERT_EQ(Trainctl({"pause"}).exit_code, 0);
  // Straight from a raw gRPC client: trainctl's own flags are not in the way.
  for (const std::string name : {std::string("mine\n999999 SUCCEEDED  lenet5  forged"),
                                 std::string("\x1b[2J\x1b]0;owned\x07title"),
                                 std::string("back\rspace\xc2\x9b"
                                             "31m")}) {
    trainer::v1::SubmitJobRequest request;
    request.mutable_spec()->set_model("mlp");
    request.mutable_spec()->set_dataset("fake");
    request.mutable_spec()->set_name(name);
    trainer::v1::Job job;
    grpc::ClientContext context;
    const grpc::Status status = stub().SubmitJob(&context, request, &job);
    ASSERT_TRUE(status.ok()) << status.error_message();
    const Result show = Trainctl({"show", std::to_string(job.id())});
    EXPECT_EQ(show.out.find('\x1b'), std::string::npos) << show.out;
    EXPECT_EQ(show.out.find('\r'), std::string::npos) << show.out;
  }
  const Result list = Trainctl({"list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(std::count(list.out.begin(), list.out.end(), '\n'), 4) << list.out;  // header + 3
  EXPECT_EQ(list.out.find("\n999999"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("mine\\n999999"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("\\x1b[2J"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("\\u009b31m"), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace traind
