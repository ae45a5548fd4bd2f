#include "tests/daemon_fixture.h"

#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "client/stored_events.h"
#include "client/trainctl.h"

namespace traind {

using trainer::v1::Job;

void DaemonTest::SetUp() {
  // Workers inherit this. ctest runs several of these tests at once; on a many-core host each
  // worker would otherwise start one LibTorch thread per core, and the oversubscribed threads
  // slowed a 25 s test past its 120 s deadline on the 16-core CUDA host. A job's --threads still
  // wins.
  setenv("OMP_NUM_THREADS", "2", /*overwrite=*/0);
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  // Unix socket paths are limited to ~107 bytes: keep the directory short.
  state_dir_ = "/tmp/traind-test-" + std::to_string(getpid()) + "-" + info->name();
  if (state_dir_.size() > 80) state_dir_.resize(80);
  std::filesystem::remove_all(state_dir_);
  std::filesystem::create_directories(state_dir_);  // a data root (below) exists before traind
  StartDaemon();
}

void DaemonTest::TearDown() {
  StopDaemon();
  std::filesystem::remove_all(state_dir_);
}

void DaemonTest::StartDaemon() {
  DaemonOptions options;
  options.state_dir = state_dir_;
  options.worker_path = TRAIND_WORKER_PATH;
  options.cancel_grace = absl::Seconds(3);
  options.slots = slots_;
  options.enable_fault_injection = fault_injection_;
  options.data_roots = {state_dir_};  // tests write their datasets there
  options.http = http_;
  options.token_file = token_file_;
  options.limits = limits_;
  options.worker_nice = worker_nice_;
  options.checkpoint_minutes = checkpoint_minutes_;
  auto daemon = Daemon::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  daemon_ = std::move(*daemon);
  address_ = daemon_->addresses().front();
  stub_ = trainer::v1::Trainer::NewStub(
      grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
}

void DaemonTest::StopDaemon() {
  stub_.reset();
  daemon_.reset();
}

trainer::v1::Trainer::Stub& DaemonTest::stub() { return *stub_; }

DaemonTest::Result DaemonTest::Trainctl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"trainctl", "--addr", address_};
  argv.insert(argv.end(), args.begin(), args.end());
  std::ostringstream out, err;
  const int code = RunTrainctl(argv, out, err);
  return Result{code, out.str(), err.str()};
}

int64_t DaemonTest::SubmitSmall(const std::string& model, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {
      "submit", "--model",       model,  "--dataset",    "fashion-mnist", "--device",
      "cpu",    "--limit-train", "1280", "--limit-test", "500",           "--batch-size",
      "64",     "--log-every",   "3"};
  args.insert(args.end(), extra.begin(), extra.end());
  Result result = Trainctl(args);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return std::stoll(result.out);
}

Job DaemonTest::GetJob(int64_t id) {
  trainer::v1::GetJobRequest request;
  request.set_id(id);
  Job job;
  grpc::ClientContext context;
  grpc::Status status = stub().GetJob(&context, request, &job);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return job;
}

Job DaemonTest::WaitForState(int64_t id, Job::State state, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  Job job;
  while (absl::Now() < deadline) {
    job = GetJob(id);
    if (job.state() == state) return job;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "job " << id << " never reached " << Job::State_Name(state) << "; it is "
                << Job::State_Name(job.state()) << " " << job.result().error();
  return job;
}

std::vector<trainer::v1::JobEvent> DaemonTest::Events(int64_t id) {
  std::vector<trainer::v1::JobEvent> events;
  const grpc::Status status = ForEachStoredEvent(
      stub(), id, [&](const trainer::v1::JobEvent& event) { events.push_back(event); });
  EXPECT_TRUE(status.ok()) << status.error_message();
  return events;
}

namespace {
void WriteGz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}
std::string Header(std::initializer_list<uint32_t> dims) {
  std::string h = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift : {24, 16, 8, 0}) h += static_cast<char>((d >> shift) & 0xff);
  }
  return h;
}
}  // namespace

void WriteTokenFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  std::filesystem::permissions(
      path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

std::string WriteTinyIdxDataset(const std::string& dir, int images, bool truncate_train_images) {
  std::filesystem::create_directories(dir);
  std::string pixels(static_cast<size_t>(images) * 28 * 28, 0);
  std::string labels(static_cast<size_t>(images), 0);
  for (int i = 0; i < images; ++i) {
    labels[i] = static_cast<char>(i % 10);
    for (int p = 0; p < 28 * 28; ++p)
      pixels[i * 784 + p] = static_cast<char>((p * (i % 10)) & 0xff);
  }
  std::string train_images = Header({uint32_t(images), 28, 28}) + pixels;
  if (truncate_train_images) train_images.resize(train_images.size() / 2);
  WriteGz(dir + "/train-images-idx3-ubyte.gz", train_images);
  WriteGz(dir + "/train-labels-idx1-ubyte.gz", Header({uint32_t(images)}) + labels);
  WriteGz(dir + "/t10k-images-idx3-ubyte.gz", Header({uint32_t(images), 28, 28}) + pixels);
  WriteGz(dir + "/t10k-labels-idx1-ubyte.gz", Header({uint32_t(images)}) + labels);
  return dir;
}

}  // namespace traind
