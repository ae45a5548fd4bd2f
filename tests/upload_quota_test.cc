// Quotas hold for uploads in flight, end to end: a real traind on a Unix socket and plaintext
// loopback TCP with two user tokens, and uploads held open halfway through (gRPC's callback
// client), so that many are in flight at once the way a client opening them concurrently makes
// them. Each is under the storage quota; together they are over it, or over the token's
// --max-uploads-per-token: those beyond are refused while the first ones are still in progress,
// and the first ones then complete.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/sha256.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "tests/daemon_fixture.h"
#include "trainer/v1/trainer.grpc.pb.h"

namespace traind {
namespace {

using grpc::StatusCode;

constexpr char kAlice[] = "alice-token-0123456789";
constexpr char kBob[] = "bob-token-0123456789ab";

std::string DigestOf(const std::string& content) {
  Sha256 hash;
  hash.Update(content);
  return "sha256:" + hash.HexDigest();
}

trainer::v1::UploadBlobRequest HeaderFor(const std::string& content) {
  trainer::v1::UploadBlobRequest message;
  message.mutable_header()->set_digest(DigestOf(content));
  message.mutable_header()->set_size_bytes(static_cast<int64_t>(content.size()));
  message.mutable_header()->set_kind("data");
  message.mutable_header()->set_name("part.bin");
  return message;
}

void Authorize(grpc::ClientContext* context, const std::string& token) {
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
}

// One upload, held open after its header and the first half of its content until Resume(): it
// stays in flight as long as the test wants. The destructor cancels it if it is still open.
class HeldUpload : public grpc::ClientWriteReactor<trainer::v1::UploadBlobRequest> {
 public:
  HeldUpload(trainer::v1::Trainer::Stub* stub, const std::string& token, const std::string& content)
      : header_(HeaderFor(content)) {
    first_.set_chunk(content.substr(0, content.size() / 2));
    rest_.set_chunk(content.substr(content.size() / 2));
    Authorize(&context_, token);
    stub->async()->UploadBlob(&context_, &blob_, this);
    StartWrite(&header_);
    StartCall();
  }
  ~HeldUpload() override {
    context_.TryCancel();
    Wait(absl::Seconds(60));
  }

  // Writes are sequential: header, first half, (Resume) rest, then WritesDone.
  void OnWriteDone(bool ok) override {
    if (!ok) return;  // the daemon ended the call (a refusal): OnDone says why
    int writes;
    {
      absl::MutexLock lock(&mu_);
      writes = ++writes_;
    }
    if (writes == 1) StartWrite(&first_);
    if (writes == 3) StartWritesDone();
  }
  void OnDone(const grpc::Status& status) override {
    absl::MutexLock lock(&mu_);
    status_ = status;
    done_ = true;
  }

  // Sends the rest, once the first half is out (one write at a time). Only for an upload the
  // daemon admitted: it waits for the rest until the call's deadline.
  void Resume() {
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(this, &HeldUpload::HalfwayOrDone), absl::Seconds(30));
      if (done_ || writes_ < 2) return;
    }
    StartWrite(&rest_);
  }

  bool done() {
    absl::MutexLock lock(&mu_);
    return done_;
  }
  // The call's status once it ended; DEADLINE_EXCEEDED (of this wait) if it did not.
  grpc::Status Wait(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    if (!mu_.AwaitWithTimeout(absl::Condition(&done_), timeout)) {
      return grpc::Status(StatusCode::DEADLINE_EXCEEDED, "the upload did not end");
    }
    return status_;
  }
  const trainer::v1::Blob& blob() const { return blob_; }

 private:
  bool HalfwayOrDone() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return writes_ >= 2 || done_; }

  grpc::ClientContext context_;
  trainer::v1::Blob blob_;
  const trainer::v1::UploadBlobRequest header_;
  trainer::v1::UploadBlobRequest first_;
  trainer::v1::UploadBlobRequest rest_;
  absl::Mutex mu_;
  int writes_ ABSL_GUARDED_BY(mu_) = 0;  // completed
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
};

class UploadQuotaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_dir_ = "/tmp/traind-upq-" + std::to_string(getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name();
    if (state_dir_.size() > 80) state_dir_.resize(80);
    std::filesystem::remove_all(state_dir_);
    std::filesystem::create_directories(state_dir_);
    WriteTokenFile(state_dir_ + "/tokens", absl::StrCat(kAlice, " alice\n", kBob, " bob user\n"));
  }
  void TearDown() override {
    local_.reset();
    tcp_.reset();
    daemon_.reset();
    std::filesystem::remove_all(state_dir_);
  }

  void StartDaemon(int64_t max_storage_per_token, int max_uploads_per_token) {
    DaemonOptions options;
    options.state_dir = state_dir_ + "/state";
    options.worker_path = TRAIND_WORKER_PATH;
    options.listen = {"unix:" + state_dir_ + "/traind.sock", "127.0.0.1:0"};
    options.allow_insecure_tcp = true;
    options.token_file = state_dir_ + "/tokens";
    options.max_storage_per_token = max_storage_per_token;
    options.limits.max_uploads = max_uploads_per_token;
    auto daemon = Daemon::Start(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = std::move(*daemon);
    local_ = trainer::v1::Trainer::NewStub(
        grpc::CreateChannel(daemon_->addresses()[0], grpc::InsecureChannelCredentials()));
    tcp_ = trainer::v1::Trainer::NewStub(
        grpc::CreateChannel(daemon_->addresses()[1], grpc::InsecureChannelCredentials()));
  }

  // A whole upload at once (the synchronous stub, as trainctl does it).
  static grpc::Status Upload(trainer::v1::Trainer::Stub* stub, const std::string& token,
                             const std::string& content) {
    grpc::ClientContext context;
    Authorize(&context, token);
    trainer::v1::Blob blob;
    auto writer = stub->UploadBlob(&context, &blob);
    trainer::v1::UploadBlobRequest chunk;
    chunk.set_chunk(content);
    if (writer->Write(HeaderFor(content))) writer->Write(chunk);
    writer->WritesDone();
    return writer->Finish();
  }

  grpc::Status GetBlob(const std::string& token, const std::string& content) {
    grpc::ClientContext context;
    Authorize(&context, token);
    trainer::v1::GetBlobRequest request;
    request.set_digest(DigestOf(content));
    trainer::v1::Blob blob;
    return tcp_->GetBlob(&context, request, &blob);
  }

  // Opens one held upload per content as `token`, all at once, then waits until `refusals` of
  // them have ended (the daemon refuses while the others are in flight; nothing else ends them).
  // Returns them all; `ended` gets the indexes of those that ended.
  std::vector<std::unique_ptr<HeldUpload>> OpenHeld(const std::string& token,
                                                    const std::vector<std::string>& contents,
                                                    size_t refusals, std::vector<size_t>* ended) {
    std::vector<std::unique_ptr<HeldUpload>> uploads;
    for (const std::string& content : contents) {
      uploads.push_back(std::make_unique<HeldUpload>(tcp_.get(), token, content));
    }
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (true) {
      ended->clear();
      for (size_t i = 0; i < uploads.size(); ++i) {
        if (uploads[i]->done()) ended->push_back(i);
      }
      if (ended->size() >= refusals || absl::Now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // Anything more that was going to end (wrongly) would have by now: the refusals came back.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ended->clear();
    for (size_t i = 0; i < uploads.size(); ++i) {
      if (uploads[i]->done()) ended->push_back(i);
    }
    return uploads;
  }

  std::string state_dir_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<trainer::v1::Trainer::Stub> local_;
  std::unique_ptr<trainer::v1::Trainer::Stub> tcp_;
};

// The issue: uploads in progress did not count against the storage quota, so concurrent uploads
// each under it were all admitted.
TEST_F(UploadQuotaTest, UploadsInFlightCountAgainstTheStorageQuota) {
  StartDaemon(/*max_storage_per_token=*/1000, /*max_uploads_per_token=*/10);
  std::vector<std::string> contents;
  for (char c : std::string("abcde")) contents.push_back(std::string(300, c));
  std::vector<size_t> ended;
  std::vector<std::unique_ptr<HeldUpload>> uploads = OpenHeld(kAlice, contents, 2, &ended);

  // 3 x 300 fit in 1000 while in flight; the other two are refused before they store anything.
  ASSERT_EQ(ended.size(), 2u) << "uploads in flight were not counted against the quota";
  for (size_t i : ended) {
    const grpc::Status status = uploads[i]->Wait(absl::ZeroDuration());
    EXPECT_EQ(status.error_code(), StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
    EXPECT_NE(status.error_message().find("storage quota: 'alice' holds 0 bytes"),
              std::string::npos)
        << status.error_message();
    EXPECT_NE(status.error_message().find("has 900 more in flight in "), std::string::npos)
        << status.error_message();
    EXPECT_NE(status.error_message().find("the 1000 bytes of traind --max-storage-per-token"),
              std::string::npos)
        << status.error_message();
    EXPECT_EQ(status.error_message().find(state_dir_), std::string::npos) << "no paths";
  }
  // Another token's quota and a local caller are not touched by alice's uploads in flight.
  const grpc::Status bobs = Upload(tcp_.get(), kBob, std::string(900, 'x'));
  EXPECT_TRUE(bobs.ok()) << bobs.error_message();
  const grpc::Status local = Upload(local_.get(), "", std::string(5000, 'y'));
  EXPECT_TRUE(local.ok()) << local.error_message();

  // The first ones complete.
  for (size_t i = 0; i < uploads.size(); ++i) {
    if (std::find(ended.begin(), ended.end(), i) == ended.end()) uploads[i]->Resume();
  }
  for (size_t i = 0; i < uploads.size(); ++i) {
    if (std::find(ended.begin(), ended.end(), i) != ended.end()) {
      EXPECT_EQ(GetBlob(kAlice, contents[i]).error_code(), StatusCode::NOT_FOUND)
          << "a refused upload left a blob";
      continue;
    }
    const grpc::Status status = uploads[i]->Wait(absl::Seconds(30));
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(uploads[i]->blob().size_bytes(), 300);
    EXPECT_TRUE(GetBlob(kAlice, contents[i]).ok());
  }

  // Stored now, and counted as stored (once): 100 more fit, 101 do not.
  const grpc::Status over = Upload(tcp_.get(), kAlice, std::string(101, 'z'));
  EXPECT_EQ(over.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(over.error_message().find(
                "'alice' holds 900 bytes (uploads 900, job files 0, job events 0) and "
                "has 0 more in flight"),
            std::string::npos)
      << over.error_message();
  const grpc::Status fits = Upload(tcp_.get(), kAlice, std::string(100, 'z'));
  EXPECT_TRUE(fits.ok()) << fits.error_message();
}

TEST_F(UploadQuotaTest, OneTokenMayHaveOnlySoManyUploadsInFlight) {
  StartDaemon(/*max_storage_per_token=*/int64_t{1} << 30, /*max_uploads_per_token=*/2);
  std::vector<std::string> contents;
  for (char c : std::string("abcd")) contents.push_back(std::string(1000, c));
  std::vector<size_t> ended;
  std::vector<std::unique_ptr<HeldUpload>> uploads = OpenHeld(kAlice, contents, 2, &ended);

  ASSERT_EQ(ended.size(), 2u) << "more than --max-uploads-per-token uploads were admitted";
  for (size_t i : ended) {
    const grpc::Status status = uploads[i]->Wait(absl::ZeroDuration());
    EXPECT_EQ(status.error_code(), StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(status.error_message(),
              "uploads: 'alice' already has 2 uploads in flight; the limit is 2 (traind "
              "--max-uploads-per-token); wait for one to end");
  }
  EXPECT_TRUE(Upload(tcp_.get(), kBob, "bob's own slots").ok());
  EXPECT_TRUE(Upload(local_.get(), "", "the socket is not limited").ok());

  for (size_t i = 0; i < uploads.size(); ++i) {
    if (std::find(ended.begin(), ended.end(), i) != ended.end()) continue;
    uploads[i]->Resume();
    const grpc::Status status = uploads[i]->Wait(absl::Seconds(30));
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
  // Slots come back before the status is sent: the next uploads are admitted at once.
  for (int i = 0; i < 3; ++i) {
    const grpc::Status status = Upload(tcp_.get(), kAlice, "again " + std::to_string(i));
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
}

TEST_F(UploadQuotaTest, ACancelledUploadGivesBackItsSlotAndBytes) {
  StartDaemon(/*max_storage_per_token=*/1000, /*max_uploads_per_token=*/1);
  std::vector<size_t> ended;
  {
    std::vector<std::unique_ptr<HeldUpload>> held =
        OpenHeld(kAlice, {std::string(1000, 'a')}, 0, &ended);
    EXPECT_TRUE(ended.empty());
  }  // cancelled by the client, halfway
  // The daemon learns of the cancellation a moment after the client does.
  grpc::Status status;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  do {
    status = Upload(tcp_.get(), kAlice, std::string(1000, 'b'));
    if (status.error_code() != StatusCode::RESOURCE_EXHAUSTED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (absl::Now() < deadline);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(GetBlob(kAlice, std::string(1000, 'a')).error_code(), StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace traind
