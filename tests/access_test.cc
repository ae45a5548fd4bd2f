// Who may do what, end to end: a real traind listening on a Unix socket and on plaintext loopback
// TCP with a token file of two users and an admin, called with raw gRPC stubs the way an attacker
// would (nothing filtered by trainctl).
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/beneath.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "tests/daemon_fixture.h"
#include "trainer/v1/peers.grpc.pb.h"
#include "trainer/v1/trainer.grpc.pb.h"

namespace traind {
namespace {

using grpc::StatusCode;
using trainer::v1::Job;

constexpr char kAlice[] = "alice-token-0123456789";
constexpr char kBob[] = "bob-token-0123456789ab";
constexpr char kRoot[] = "root-token-0123456789a";
constexpr char kCarol[] = "carol-token-0123456789";  // a user who may run programs
constexpr char kCsv[] = "x,label\n1,0\n";

std::string DigestOf(const std::string& content) {
  Sha256 hash;
  hash.Update(content);
  return "sha256:" + hash.HexDigest();
}

class AccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_dir_ = "/tmp/traind-access-" + std::to_string(getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name();
    if (state_dir_.size() > 80) state_dir_.resize(80);
    std::filesystem::remove_all(state_dir_);
    std::filesystem::create_directories(state_dir_);
    token_file_ = state_dir_ + "/tokens";
    WriteTokenFile(token_file_,
                   absl::StrCat("# name and role\n", kAlice, " alice\n", kBob, " bob user\n", kRoot,
                                " root admin\n", kCarol, " carol user,run-code\n"));
    StartDaemon();
    // Jobs stay queued: these tests are about who may touch them, not about training.
    trainer::v1::SetQueueStateRequest pause;
    pause.set_action(trainer::v1::SetQueueStateRequest::PAUSE);
    trainer::v1::QueueState state;
    grpc::ClientContext context;
    ASSERT_TRUE(local_->SetQueueState(&context, pause, &state).ok());
  }
  // A traind on the fixture's state directory and token file (again, after a restart).
  void StartDaemon() {
    DaemonOptions options;
    options.state_dir = state_dir_ + "/state";
    options.worker_path = TRAIND_WORKER_PATH;
    options.listen = {"unix:" + state_dir_ + "/traind.sock", "127.0.0.1:0"};
    options.allow_insecure_tcp = true;
    options.token_file = token_file_;
    auto daemon = Daemon::Start(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = std::move(*daemon);
    local_ = trainer::v1::Trainer::NewStub(
        grpc::CreateChannel(daemon_->addresses()[0], grpc::InsecureChannelCredentials()));
    tcp_ = trainer::v1::Trainer::NewStub(
        grpc::CreateChannel(daemon_->addresses()[1], grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    local_.reset();
    tcp_.reset();
    daemon_.reset();
    std::filesystem::remove_all(state_dir_);
  }

  // A context carrying `token` ("" for none).
  static std::unique_ptr<grpc::ClientContext> As(const std::string& token) {
    auto context = std::make_unique<grpc::ClientContext>();
    if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return context;
  }

  int64_t SubmitAs(const std::string& token, const std::string& key = "") {
    trainer::v1::SubmitJobRequest request;
    request.mutable_spec()->set_model("mlp");
    request.mutable_spec()->set_dataset("fake");
    request.mutable_spec()->set_device("cpu");
    request.mutable_spec()->set_epochs(1);
    request.set_idempotency_key(key);
    Job job;
    grpc::Status status = tcp_->SubmitJob(As(token).get(), request, &job);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return job.id();
  }

  // Calls `method` of the service over TCP as `token`, with `id` wherever the request names a
  // job, sweep or blob. FAILs for a method this switch does not know, so a new RPC must be added
  // here (and so is checked) before this test passes.
  grpc::Status Call(const std::string& method, const std::string& token, int64_t id = 1,
                    const std::string& digest = std::string("sha256:") + std::string(64, '0')) {
    auto context = As(token);
    trainer::v1::Job job;
    if (method == "SubmitJob") {
      trainer::v1::SubmitJobRequest request;
      request.mutable_spec()->set_model("mlp");
      request.mutable_spec()->set_dataset("fake");
      request.mutable_spec()->set_device("cpu");
      return tcp_->SubmitJob(context.get(), request, &job);
    }
    if (method == "GetJob") {
      trainer::v1::GetJobRequest request;
      request.set_id(id);
      return tcp_->GetJob(context.get(), request, &job);
    }
    if (method == "ListJobs") {
      trainer::v1::ListJobsResponse response;
      return tcp_->ListJobs(context.get(), {}, &response);
    }
    if (method == "CancelJob") {
      trainer::v1::CancelJobRequest request;
      request.set_id(id);
      return tcp_->CancelJob(context.get(), request, &job);
    }
    if (method == "WatchJob") {
      trainer::v1::WatchJobRequest request;
      request.set_id(id);
      auto reader = tcp_->WatchJob(context.get(), request);
      trainer::v1::JobEvent event;
      if (reader->Read(&event)) context->TryCancel();  // it streamed: allowed
      grpc::Status status = reader->Finish();
      return status.error_code() == StatusCode::CANCELLED ? grpc::Status::OK : status;
    }
    if (method == "ListJobEvents") {
      trainer::v1::ListJobEventsRequest request;
      request.set_id(id);
      trainer::v1::ListJobEventsResponse response;
      return tcp_->ListJobEvents(context.get(), request, &response);
    }
    if (method == "ListDevices") {
      trainer::v1::ListDevicesResponse response;
      return tcp_->ListDevices(context.get(), {}, &response);
    }
    if (method == "RetryJob") {
      trainer::v1::RetryJobRequest request;
      request.set_id(id);
      return tcp_->RetryJob(context.get(), request, &job);
    }
    if (method == "SubmitSweep") {
      trainer::v1::SubmitSweepRequest request;
      request.mutable_spec()->mutable_base()->set_model("mlp");
      request.mutable_spec()->mutable_base()->set_dataset("fake");
      request.mutable_spec()->mutable_base()->set_device("cpu");
      trainer::v1::Sweep sweep;
      return tcp_->SubmitSweep(context.get(), request, &sweep);
    }
    if (method == "GetSweep") {
      trainer::v1::GetSweepRequest request;
      request.set_id(id);
      trainer::v1::Sweep sweep;
      return tcp_->GetSweep(context.get(), request, &sweep);
    }
    if (method == "CancelSweep") {
      trainer::v1::CancelSweepRequest request;
      request.set_id(id);
      trainer::v1::Sweep sweep;
      return tcp_->CancelSweep(context.get(), request, &sweep);
    }
    if (method == "ExtendSearch") {
      trainer::v1::ExtendSearchRequest request;
      request.set_id(id);
      request.set_trials(10);
      trainer::v1::Sweep sweep;
      return tcp_->ExtendSearch(context.get(), request, &sweep);
    }
    if (method == "ListSweeps") {
      trainer::v1::ListSweepsResponse response;
      return tcp_->ListSweeps(context.get(), {}, &response);
    }
    if (method == "GetSweepReport") {
      trainer::v1::GetSweepReportRequest request;
      request.set_id(id);
      trainer::v1::SweepReport report;
      return tcp_->GetSweepReport(context.get(), request, &report);
    }
    if (method == "SetQueueState") {
      trainer::v1::SetQueueStateRequest request;
      request.set_action(trainer::v1::SetQueueStateRequest::PAUSE);
      trainer::v1::QueueState state;
      return tcp_->SetQueueState(context.get(), request, &state);
    }
    if (method == "UploadBlob") {
      trainer::v1::Blob blob;
      auto writer = tcp_->UploadBlob(context.get(), &blob);
      const std::string content = kCsv;
      trainer::v1::UploadBlobRequest header;
      header.mutable_header()->set_digest(DigestOf(content));
      header.mutable_header()->set_size_bytes(static_cast<int64_t>(content.size()));
      header.mutable_header()->set_kind("data");
      header.mutable_header()->set_name("tiny.csv");
      trainer::v1::UploadBlobRequest chunk;
      chunk.set_chunk(content);
      if (writer->Write(header)) writer->Write(chunk);
      writer->WritesDone();
      return writer->Finish();
    }
    if (method == "GetBlob") {
      trainer::v1::GetBlobRequest request;
      request.set_digest(digest);
      trainer::v1::Blob blob;
      return tcp_->GetBlob(context.get(), request, &blob);
    }
    if (method == "ListArtifacts") {
      trainer::v1::ListArtifactsRequest request;
      request.set_id(id);
      trainer::v1::ListArtifactsResponse response;
      return tcp_->ListArtifacts(context.get(), request, &response);
    }
    if (method == "DownloadArtifact") {
      trainer::v1::DownloadArtifactRequest request;
      request.set_id(id);
      auto reader = tcp_->DownloadArtifact(context.get(), request);
      trainer::v1::DownloadArtifactResponse part;
      while (reader->Read(&part)) {
      }
      return reader->Finish();
    }
    if (method == "DeleteJob") {
      trainer::v1::DeleteJobRequest request;
      request.set_id(id);
      trainer::v1::DeleteJobResponse response;
      return tcp_->DeleteJob(context.get(), request, &response);
    }
    if (method == "SetJobPriority") {
      trainer::v1::SetJobPriorityRequest request;
      request.set_id(id);
      request.set_priority(5);
      trainer::v1::Job job;
      return tcp_->SetJobPriority(context.get(), request, &job);
    }
    if (method == "Shutdown") {
      trainer::v1::ShutdownResponse response;
      return tcp_->Shutdown(context.get(), {}, &response);
    }
    ADD_FAILURE() << "the test does not know how to call " << method << ": add it to Call()";
    return grpc::Status(StatusCode::UNIMPLEMENTED, method);
  }

  static std::vector<std::string> Methods() {
    const google::protobuf::ServiceDescriptor* service =
        trainer::v1::SubmitJobRequest::descriptor()->file()->FindServiceByName("Trainer");
    std::vector<std::string> names;
    for (int i = 0; i < service->method_count(); ++i) names.push_back(service->method(i)->name());
    return names;
  }

  std::string state_dir_;
  std::string token_file_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<trainer::v1::Trainer::Stub> local_;
  std::unique_ptr<trainer::v1::Trainer::Stub> tcp_;
};

TEST_F(AccessTest, EveryRpcRefusesCallersWithoutAValidToken) {
  const int64_t id = SubmitAs(kAlice);
  const std::vector<std::string> methods = Methods();
  ASSERT_GE(methods.size(), 17u);
  for (const std::string& method : methods) {
    for (const std::string& token :
         {std::string(), std::string("not-a-token-of-this-daemon"), std::string(kAlice) + "x"}) {
      const grpc::Status status = Call(method, token, id);
      EXPECT_EQ(status.error_code(), StatusCode::UNAUTHENTICATED)
          << method << " with token '" << token << "': " << status.error_message();
    }
  }
}

TEST_F(AccessTest, ListDevicesNeedsATokenOverTcp) {  // the example from the issue
  EXPECT_EQ(Call("ListDevices", "").error_code(), StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Call("ListDevices", kBob).ok());
}

TEST_F(AccessTest, AUserActsOnlyOnItsOwnJobs) {
  const int64_t alices = SubmitAs(kAlice);
  // Every call that names a job refuses bob on alice's job, and lets alice and the admin through
  // the ownership check (what happens next depends on the job: it is queued, with no artifacts).
  for (const std::string method : {"GetJob", "CancelJob", "WatchJob", "ListJobEvents", "RetryJob",
                                   "ListArtifacts", "DownloadArtifact", "DeleteJob"}) {
    const grpc::Status status = Call(method, kBob, alices);
    EXPECT_EQ(status.error_code(), StatusCode::PERMISSION_DENIED)
        << method << ": " << status.error_message();
    EXPECT_NE(status.error_message().find("is not yours"), std::string::npos) << method;
  }
  EXPECT_TRUE(Call("GetJob", kAlice, alices).ok());
  EXPECT_TRUE(Call("GetJob", kRoot, alices).ok());
  EXPECT_TRUE(Call("ListJobEvents", kRoot, alices).ok());
  // Bob's list has only his jobs; the admin's has everyone's.
  const int64_t bobs = SubmitAs(kBob);
  auto listed = [&](const std::string& token) {
    trainer::v1::ListJobsResponse response;
    EXPECT_TRUE(tcp_->ListJobs(As(token).get(), {}, &response).ok());
    std::set<int64_t> ids;
    for (const Job& job : response.jobs()) ids.insert(job.id());
    return ids;
  };
  EXPECT_EQ(listed(kBob), (std::set<int64_t>{bobs}));
  EXPECT_EQ(listed(kAlice), (std::set<int64_t>{alices}));
  EXPECT_EQ(listed(kRoot), (std::set<int64_t>{alices, bobs}));
  // A job can not depend on, or start from, someone else's job.
  trainer::v1::SubmitJobRequest request;
  request.mutable_spec()->set_model("mlp");
  request.mutable_spec()->set_dataset("fake");
  request.add_after(alices);
  Job job;
  EXPECT_EQ(tcp_->SubmitJob(As(kBob).get(), request, &job).error_code(),
            StatusCode::PERMISSION_DENIED);
  // The admin cancels and deletes alice's job; alice's job is then gone for her too.
  EXPECT_TRUE(Call("CancelJob", kRoot, alices).ok());
  EXPECT_TRUE(Call("DeleteJob", kRoot, alices).ok());
  EXPECT_EQ(Call("GetJob", kAlice, alices).error_code(), StatusCode::NOT_FOUND);
}

TEST_F(AccessTest, OnlyAdminsChangeTheQueue) {
  const grpc::Status user = Call("SetQueueState", kBob);
  EXPECT_EQ(user.error_code(), StatusCode::PERMISSION_DENIED) << user.error_message();
  EXPECT_NE(user.error_message().find("needs an admin token"), std::string::npos);
  trainer::v1::SetQueueStateRequest get;
  get.set_action(trainer::v1::SetQueueStateRequest::GET);
  trainer::v1::QueueState state;
  EXPECT_TRUE(tcp_->SetQueueState(As(kBob).get(), get, &state).ok());
  EXPECT_TRUE(state.paused());
  EXPECT_TRUE(Call("SetQueueState", kRoot).ok());
}

TEST_F(AccessTest, OnlyAdminsMayStopTheDaemon) {
  const grpc::Status user = Call("Shutdown", kBob);
  EXPECT_EQ(user.error_code(), StatusCode::PERMISSION_DENIED) << user.error_message();
  EXPECT_NE(user.error_message().find("needs an admin token"), std::string::npos);
  // An admin may; this daemon is embedded in the test, so it refuses to be stopped remotely.
  const grpc::Status admin = Call("Shutdown", kRoot);
  EXPECT_EQ(admin.error_code(), StatusCode::FAILED_PRECONDITION) << admin.error_message();
}

TEST_F(AccessTest, IdempotencyKeysDoNotCrossOwners) {
  const int64_t alices = SubmitAs(kAlice, "nightly");
  const int64_t bobs = SubmitAs(kBob, "nightly");
  EXPECT_NE(bobs, alices);  // before: bob got alice's job back, and could then act on it
  EXPECT_EQ(SubmitAs(kAlice, "nightly"), alices);
}

TEST_F(AccessTest, SweepsAndUploadsBelongToWhoeverMadeThem) {
  trainer::v1::SubmitSweepRequest request;
  request.mutable_spec()->mutable_base()->set_model("mlp");
  request.mutable_spec()->mutable_base()->set_dataset("fake");
  request.mutable_spec()->mutable_base()->set_device("cpu");
  trainer::v1::Sweep sweep;
  ASSERT_TRUE(tcp_->SubmitSweep(As(kAlice).get(), request, &sweep).ok());
  EXPECT_EQ(sweep.owner(), "alice");
  EXPECT_EQ(Call("GetSweep", kBob, sweep.id()).error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Call("GetSweepReport", kBob, sweep.id()).error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(Call("GetSweep", kAlice, sweep.id()).ok());
  // The list of sweeps: each user sees its own, found by name too; the local admin sees all.
  auto listed = [&](const std::string& token, const std::string& name) {
    trainer::v1::ListSweepsRequest list;
    list.set_name(name);
    trainer::v1::ListSweepsResponse response;
    EXPECT_TRUE(tcp_->ListSweeps(As(token).get(), list, &response).ok());
    std::set<int64_t> ids;
    for (const auto& s : response.sweeps()) ids.insert(s.id());
    return ids;
  };
  EXPECT_EQ(listed(kAlice, ""), (std::set<int64_t>{sweep.id()}));
  EXPECT_TRUE(listed(kBob, "").empty());
  EXPECT_TRUE(listed(kAlice, "no such name").empty());

  ASSERT_TRUE(Call("UploadBlob", kAlice).ok());
  const std::string digest = DigestOf(kCsv);
  EXPECT_TRUE(Call("GetBlob", kAlice, 0, digest).ok());
  EXPECT_TRUE(Call("GetBlob", kRoot, 0, digest).ok());
  // To bob it is as if it were not there, until he proves he has it by uploading it himself.
  EXPECT_EQ(Call("GetBlob", kBob, 0, digest).error_code(), StatusCode::NOT_FOUND);
  trainer::v1::SubmitJobRequest submit;
  submit.mutable_spec()->set_model("mlp");
  submit.mutable_spec()->set_dataset("csv");
  submit.mutable_spec()->set_data_file(digest);
  Job job;
  const grpc::Status refused = tcp_->SubmitJob(As(kBob).get(), submit, &job);
  EXPECT_EQ(refused.error_code(), StatusCode::INVALID_ARGUMENT) << refused.error_message();
  EXPECT_NE(refused.error_message().find("upload it first"), std::string::npos);
  ASSERT_TRUE(Call("UploadBlob", kBob).ok());
  trainer::v1::Blob blob;
  trainer::v1::GetBlobRequest get;
  get.set_digest(digest);
  ASSERT_TRUE(tcp_->GetBlob(As(kBob).get(), get, &blob).ok());
  EXPECT_EQ(std::set<std::string>(blob.owners().begin(), blob.owners().end()),
            (std::set<std::string>{"alice", "bob"}));
}

// A remote caller learns nothing of the daemon's file system outside the data roots: the same
// message for a path there and one not there, and neither the roots nor the state directory named.
TEST_F(AccessTest, AnOutsidePathGetsOneMessageThatNamesNoRootsForRemoteCallers) {
  auto refusal = [&](trainer::v1::Trainer::Stub* stub, const std::string& token,
                     const std::string& data_dir) {
    trainer::v1::SubmitJobRequest request;
    request.mutable_spec()->set_model("mlp");
    request.mutable_spec()->set_dataset("mnist");
    request.mutable_spec()->set_device("cpu");
    request.mutable_spec()->set_data_dir(data_dir);
    Job job;
    const grpc::Status status = stub->SubmitJob(As(token).get(), request, &job);
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT) << status.error_message();
    std::string message = status.error_message();
    const size_t at = message.find(data_dir);
    if (at != std::string::npos) message.replace(at, data_dir.size(), "PATH");
    return message;
  };
  const std::string there = refusal(tcp_.get(), kBob, state_dir_);
  EXPECT_EQ(there,
            "data_dir: PATH is outside the daemon's data roots; ask its operator for a data root "
            "(traind --data-root), or upload it (trainctl --upload)");
  EXPECT_EQ(refusal(tcp_.get(), kBob, state_dir_ + "/no-such-dir"), there);
  EXPECT_EQ(refusal(tcp_.get(), kRoot, state_dir_ + "/state/blobs"), there) << "admins too";
  EXPECT_EQ(refusal(tcp_.get(), kBob, DefaultFashionMnistDir() + "/../../../.." + state_dir_),
            there);
  // The daemon's own user, on its socket, is told where the roots are.
  const std::string local = refusal(local_.get(), "", state_dir_);
  EXPECT_NE(local.find(LexicallyNormal(DefaultFashionMnistDir())), std::string::npos) << local;
}

// Server reflection's ServerReflectionInfo (a bidi stream) called as a unary call with one
// ServerReflectionRequest{list_services: ""}: OK with the service list where reflection is served,
// UNIMPLEMENTED where it is not.
grpc::Status ListServicesByReflection(const std::string& address, std::string* response_bytes) {
  grpc::GenericStub stub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  const std::string list_services("\x3a\x00", 2);  // field 7 (list_services), empty string
  grpc::Slice slice(list_services);
  grpc::ByteBuffer request(&slice, 1), response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::CompletionQueue cq;
  auto call = stub.PrepareUnaryCall(
      &context, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", request, &cq);
  call->StartCall();
  grpc::Status status;
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  cq.Next(&tag, &ok);
  std::vector<grpc::Slice> slices;
  response_bytes->clear();
  if (status.ok() && response.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices)
      response_bytes->append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return status;
}

// docs/remote.md: "server reflection is not offered when any TCP listener exists" — on the TCP
// port without a token (the example) and, since it is one server, on its socket too.
TEST_F(AccessTest, ReflectionIsNotServedWhenTcpIsListening) {
  std::string services;
  EXPECT_EQ(ListServicesByReflection(daemon_->addresses()[1], &services).error_code(),
            StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(ListServicesByReflection(daemon_->addresses()[0], &services).error_code(),
            StatusCode::UNIMPLEMENTED);
}

TEST(AccessStartTest, ReflectionIsServedOnAUnixSocketOnlyDaemon) {
  DaemonOptions options;
  options.state_dir = "/tmp/traind-access-reflection-" + std::to_string(getpid());
  options.worker_path = TRAIND_WORKER_PATH;
  auto daemon = Daemon::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  std::string services;
  const grpc::Status status = ListServicesByReflection((*daemon)->addresses()[0], &services);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_NE(services.find("trainer.v1.Trainer"), std::string::npos);
  daemon->reset();
  std::filesystem::remove_all(options.state_dir);
}

TEST(AccessStartTest, TcpWithoutTokensIsRefusedEvenOnLoopback) {
  DaemonOptions options;
  options.state_dir = "/tmp/traind-access-notokens-" + std::to_string(getpid());
  options.worker_path = TRAIND_WORKER_PATH;
  options.listen = {"127.0.0.1:0"};
  options.allow_insecure_tcp = true;
  auto daemon = Daemon::Start(options);
  EXPECT_EQ(daemon.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(daemon.status().message().find("needs --token-file"), std::string::npos)
      << daemon.status();
  // And text that only looks like loopback is not.
  options.token_file = "/dev/null";
  options.listen = {"127.0.0.1.example.invalid:0"};
  daemon = Daemon::Start(options);
  EXPECT_EQ(daemon.status().code(), absl::StatusCode::kInvalidArgument);
  std::filesystem::remove_all(options.state_dir);
}

TEST(ListenPathTest, ASocketPathOnTheDatabaseIsRefusedAndNothingIsLost) {
  const std::string dir = "/tmp/traind-listen-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  DaemonOptions options;
  options.state_dir = dir;
  options.worker_path = TRAIND_WORKER_PATH;
  int64_t id = 0;
  {
    auto daemon = Daemon::Start(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    auto stub = trainer::v1::Trainer::NewStub(
        grpc::CreateChannel((*daemon)->addresses()[0], grpc::InsecureChannelCredentials()));
    trainer::v1::SetQueueStateRequest pause;
    pause.set_action(trainer::v1::SetQueueStateRequest::PAUSE);
    trainer::v1::QueueState state;
    grpc::ClientContext pause_context;
    ASSERT_TRUE(stub->SetQueueState(&pause_context, pause, &state).ok());
    trainer::v1::SubmitJobRequest request;
    request.mutable_spec()->set_model("mlp");
    request.mutable_spec()->set_dataset("fake");
    Job job;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->SubmitJob(&context, request, &job).ok());
    id = job.id();
  }
  // The example from the issue: the daemon's own database as the socket path.
  options.listen = {"unix:" + dir + "/traind.db"};
  auto refused = Daemon::Start(options);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("is a regular file, not a socket"), std::string::npos)
      << refused.status();
  // Another: an ordinary file of the user's.
  const std::string notes = dir + "-notes.txt";
  std::ofstream(notes) << "mine";
  options.listen = {"unix:" + notes};
  EXPECT_FALSE(Daemon::Start(options).ok());
  EXPECT_TRUE(std::filesystem::exists(notes));
  std::filesystem::remove(notes);
  // The job is still there after a normal start.
  options.listen.clear();
  auto daemon = Daemon::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto stub = trainer::v1::Trainer::NewStub(
      grpc::CreateChannel((*daemon)->addresses()[0], grpc::InsecureChannelCredentials()));
  trainer::v1::GetJobRequest get;
  get.set_id(id);
  Job job;
  grpc::ClientContext context;
  EXPECT_TRUE(stub->GetJob(&context, get, &job).ok());
  daemon->reset();
  std::filesystem::remove_all(dir);
}

// The Peers service (another traind running a job's ranks here) is an attack surface of its own:
// admins only, and every field it is sent checked before anything is held or started.
TEST_F(AccessTest, PeersServeAdminTokensOnlyAndCheckEveryField) {
  auto peers = trainer::v1::Peers::NewStub(
      grpc::CreateChannel(daemon_->addresses()[1], grpc::InsecureChannelCredentials()));
  trainer::v1::ReserveRequest reserve;
  reserve.set_coordinator("a");
  reserve.set_job_id(7);
  reserve.set_ranks(1);
  trainer::v1::JobSpec* spec = reserve.mutable_spec();
  spec->set_model("lenet5");
  spec->set_dataset("fashion-mnist");
  spec->set_device("cpu");
  spec->set_hosts("a,b");
  trainer::v1::Reservation reservation;
  EXPECT_EQ(peers->Reserve(As("").get(), reserve, &reservation).error_code(),
            StatusCode::UNAUTHENTICATED);
  const grpc::Status user = peers->Reserve(As(kAlice).get(), reserve, &reservation);
  EXPECT_EQ(user.error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_NE(user.error_message().find("needs an admin token"), std::string::npos);

  auto refused = [&](const trainer::v1::ReserveRequest& request, const std::string& field) {
    const grpc::Status status = peers->Reserve(As(kRoot).get(), request, &reservation);
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT) << field << status.error_message();
    EXPECT_EQ(status.error_message().rfind(field, 0), 0u) << status.error_message();
  };
  trainer::v1::ReserveRequest bad = reserve;
  bad.set_ranks(0);
  refused(bad, "ranks:");
  bad.set_ranks(2);  // the spec runs one rank on each host
  refused(bad, "ranks:");
  bad = reserve;
  bad.set_lease_seconds(-1);
  refused(bad, "lease_seconds:");
  bad = reserve;
  bad.set_coordinator("a;reboot");
  refused(bad, "coordinator:");
  bad = reserve;
  bad.mutable_spec()->clear_hosts();
  refused(bad, "spec.hosts:");
  bad = reserve;
  bad.mutable_spec()->set_model("nosuch");
  refused(bad, "spec.model:");
  bad = reserve;
  bad.mutable_spec()->set_data_dir("/etc");
  refused(bad, "spec.data_dir:");

  // Well formed, but this traind's queue is paused: nothing is held.
  const grpc::Status paused = peers->Reserve(As(kRoot).get(), reserve, &reservation);
  EXPECT_EQ(paused.error_code(), StatusCode::RESOURCE_EXHAUSTED) << paused.error_message();
  trainer::v1::SetQueueStateRequest resume;
  resume.set_action(trainer::v1::SetQueueStateRequest::RESUME);
  trainer::v1::QueueState state;
  ASSERT_TRUE(local_->SetQueueState(As("").get(), resume, &state).ok());

  const grpc::Status held = peers->Reserve(As(kRoot).get(), reserve, &reservation);
  ASSERT_TRUE(held.ok()) << held.error_message();
  EXPECT_EQ(reservation.devices_size(), 1);
  EXPECT_EQ(reservation.caller_address(), "127.0.0.1");
  trainer::v1::Reservation second;
  const grpc::Status busy = peers->Reserve(As(kRoot).get(), reserve, &second);
  EXPECT_EQ(busy.error_code(), StatusCode::RESOURCE_EXHAUSTED) << busy.error_message();
  EXPECT_NE(busy.error_message().find("busy"), std::string::npos) << busy.error_message();

  // Phase two with fields out of range: refused before any rank starts.
  auto run_refused = [&](const trainer::v1::RunRanksRequest& request, StatusCode code,
                         const std::string& field) {
    auto context = As(kRoot);
    auto reader = peers->RunRanks(context.get(), request);
    trainer::v1::RankReport report;
    EXPECT_FALSE(reader->Read(&report)) << field;
    const grpc::Status status = reader->Finish();
    EXPECT_EQ(status.error_code(), code) << field << ": " << status.error_message();
    EXPECT_EQ(status.error_message().rfind(field, 0), 0u) << status.error_message();
  };
  trainer::v1::RunRanksRequest run;
  run.set_reservation_id(reservation.id());
  run.set_first_rank(1);
  run.set_world_size(2);
  run.set_master_port(29500);
  trainer::v1::RunRanksRequest bad_run = run;
  bad_run.set_reservation_id("nosuch");
  run_refused(bad_run, StatusCode::NOT_FOUND, "reservation_id:");
  bad_run = run;
  bad_run.set_first_rank(0);  // rank 0 is the coordinator's
  run_refused(bad_run, StatusCode::INVALID_ARGUMENT, "first_rank:");
  bad_run = run;
  bad_run.set_world_size(100000);
  run_refused(bad_run, StatusCode::INVALID_ARGUMENT, "world_size:");
  bad_run = run;
  bad_run.set_master_port(70000);
  run_refused(bad_run, StatusCode::INVALID_ARGUMENT, "master_port:");
  bad_run = run;
  bad_run.set_master_addr("$(reboot)");
  run_refused(bad_run, StatusCode::INVALID_ARGUMENT, "master_addr:");

  // Released: the CPU is free again, for a local job or another reservation.
  trainer::v1::ReleaseRequest release;
  release.set_id(reservation.id());
  trainer::v1::ReleaseResponse released;
  ASSERT_TRUE(peers->Release(As(kRoot).get(), release, &released).ok());
  const grpc::Status again = peers->Reserve(As(kRoot).get(), reserve, &second);
  EXPECT_TRUE(again.ok()) << again.error_message();
}

// A program's source, uploaded as `token`: its digest.
std::string UploadSource(trainer::v1::Trainer::Stub& stub, std::unique_ptr<grpc::ClientContext> as,
                         const std::string& content) {
  trainer::v1::Blob blob;
  auto writer = stub.UploadBlob(as.get(), &blob);
  trainer::v1::UploadBlobRequest header;
  header.mutable_header()->set_digest(DigestOf(content));
  header.mutable_header()->set_size_bytes(static_cast<int64_t>(content.size()));
  header.mutable_header()->set_kind("source");
  header.mutable_header()->set_name("train.py");
  trainer::v1::UploadBlobRequest chunk;
  chunk.set_chunk(content);
  if (writer->Write(header)) writer->Write(chunk);
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  return DigestOf(content);
}

trainer::v1::SubmitJobRequest ScriptJob(const std::string& digest) {
  trainer::v1::SubmitJobRequest request;
  trainer::v1::ScriptSpec* script = request.mutable_spec()->mutable_script();
  script->add_args("train.py");
  trainer::v1::ScriptFile* file = script->add_files();
  file->set_path("train.py");
  file->set_digest(digest);
  request.mutable_spec()->set_device("cpu");
  return request;
}

TEST_F(AccessTest, RunningAProgramNeedsTheRunCodeGrantOverRawGrpc) {
  const std::string alices = UploadSource(*tcp_, As(kAlice), "print('alice')\n");
  Job job;
  grpc::Status status = tcp_->SubmitJob(As(kAlice).get(), ScriptJob(alices), &job);
  EXPECT_EQ(status.error_code(), StatusCode::PERMISSION_DENIED) << status.error_message();
  EXPECT_NE(status.error_message().find("user,run-code"), std::string::npos)
      << status.error_message();
  // An admin token is not a grant to run code either.
  const std::string roots = UploadSource(*tcp_, As(kRoot), "print('root')\n");
  EXPECT_EQ(tcp_->SubmitJob(As(kRoot).get(), ScriptJob(roots), &job).error_code(),
            StatusCode::PERMISSION_DENIED);

  const std::string carols = UploadSource(*tcp_, As(kCarol), "print('carol')\n");
  status = tcp_->SubmitJob(As(kCarol).get(), ScriptJob(carols), &job);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(job.owner(), "carol");
  EXPECT_TRUE(job.spec().has_script());
  // The local owner may (the Unix socket).
  EXPECT_TRUE(local_->SubmitJob(As("").get(), ScriptJob(carols), &job).ok());

  // Someone else's upload is not hers to run; its digest alone proves nothing.
  status = tcp_->SubmitJob(As(kCarol).get(), ScriptJob(alices), &job);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_NE(status.error_message().find("not stored on this daemon"), std::string::npos);

  // What a raw client may put in a script job, refused by field.
  struct Case {
    std::function<void(trainer::v1::JobSpec*)> change;
    const char* message;
  };
  const std::vector<Case> cases = {
      {[](trainer::v1::JobSpec* s) { s->set_batch_size(3); }, "batch_size: not for a script job"},
      {[](trainer::v1::JobSpec* s) { s->set_model("lenet5"); }, "model: not for a script job"},
      {[](trainer::v1::JobSpec* s) { s->mutable_script()->mutable_files(0)->set_path("../x.py"); },
       "must not have empty, '.' or '..' parts"},
      {[](trainer::v1::JobSpec* s) { s->mutable_script()->mutable_files(0)->set_path("/etc/x"); },
       "must be relative"},
      {[](trainer::v1::JobSpec* s) { s->mutable_script()->set_args(0, "absent.py"); },
       "is not a file of the working directory"},
      {[](trainer::v1::JobSpec* s) { s->mutable_script()->add_args(std::string("a\0b", 3)); },
       "contains a NUL byte"},
      {[](trainer::v1::JobSpec* s) { s->mutable_script()->set_interpreter("python9"); },
       "'python9' is not one this traind allows"},
      {[](trainer::v1::JobSpec* s) { s->mutable_script()->set_interpreter("/bin/sh"); },
       "is not an interpreter's name"},
      {[](trainer::v1::JobSpec* s) { s->mutable_script()->clear_args(); },
       "script.args: give the program"},
      {[](trainer::v1::JobSpec* s) { s->set_backend("slurm"); }, "backend: not for a script job"},
  };
  for (const Case& c : cases) {
    trainer::v1::SubmitJobRequest request = ScriptJob(carols);
    c.change(request.mutable_spec());
    status = tcp_->SubmitJob(As(kCarol).get(), request, &job);
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT) << c.message;
    EXPECT_NE(status.error_message().find(c.message), std::string::npos)
        << status.error_message() << " (expected: " << c.message << ")";
  }
}

// A grant taken away reaches what its owner queued: traind restarted with a token file where
// carol may no longer run programs and bob has no token fails their queued jobs, saying why,
// and runs nothing of theirs; the local owner's job is not touched.
TEST_F(AccessTest, AGrantTakenAwayReachesJobsAlreadyQueued) {
  const std::string carols = UploadSource(*tcp_, As(kCarol), "print('carol')\n");
  Job job;
  ASSERT_TRUE(tcp_->SubmitJob(As(kCarol).get(), ScriptJob(carols), &job).ok());
  const int64_t program = job.id();
  const int64_t bobs = SubmitAs(kBob);
  const int64_t alices = SubmitAs(kAlice);
  daemon_.reset();
  WriteTokenFile(token_file_, absl::StrCat(kAlice, " alice\n", kCarol, " carol user\n"));
  StartDaemon();
  trainer::v1::SetQueueStateRequest resume;
  resume.set_action(trainer::v1::SetQueueStateRequest::RESUME);
  trainer::v1::QueueState state;
  grpc::ClientContext context;
  ASSERT_TRUE(local_->SetQueueState(&context, resume, &state).ok());
  auto ended = [&](int64_t id) {
    for (;;) {
      trainer::v1::GetJobRequest request;
      request.set_id(id);
      Job got;
      grpc::ClientContext get;
      EXPECT_TRUE(local_->GetJob(&get, request, &got).ok());
      if (got.state() != Job::QUEUED && got.state() != Job::RUNNING) return got;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  const Job carols_job = ended(program);
  EXPECT_EQ(carols_job.state(), Job::FAILED);
  EXPECT_NE(carols_job.result().error().find("'carol' may no longer run programs"),
            std::string::npos)
      << carols_job.result().error();
  const Job bobs_job = ended(bobs);
  EXPECT_EQ(bobs_job.state(), Job::FAILED);
  EXPECT_NE(bobs_job.result().error().find("'bob' has no token in traind's --token-file any more"),
            std::string::npos)
      << bobs_job.result().error();
  EXPECT_EQ(ended(alices).state(), Job::SUCCEEDED);  // a token still held: it trains
}

}  // namespace
}  // namespace traind
