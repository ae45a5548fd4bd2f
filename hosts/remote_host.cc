#include "hosts/remote_host.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"

namespace traind {

namespace {

std::chrono::system_clock::time_point After(absl::Duration timeout) {
  return absl::ToChronoTime(absl::Now() + timeout);
}

}  // namespace

RemoteHost::RemoteHost(std::string name, std::shared_ptr<grpc::Channel> channel)
    : name_(std::move(name)),
      channel_(std::move(channel)),
      stub_(trainer::v1::Peers::NewStub(channel_)) {}

RemoteHost::~RemoteHost() {
  Release();
  Cancel();
  if (thread_.joinable()) thread_.join();
}

absl::Status RemoteHost::Reserve(const trainer::v1::ReserveRequest& request,
                                 absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(After(timeout));
  const grpc::Status status = stub_->Reserve(&context, request, &reservation_);
  reserved_ = status.ok();
  // A reservation made there whose answer was lost (the deadline) cannot be released by id:
  // its lease ends it.
  return FromGrpcStatus(status);
}

void RemoteHost::Release() {
  if (!reserved_) return;
  reserved_ = false;
  grpc::ClientContext context;
  context.set_deadline(After(absl::Seconds(5)));
  trainer::v1::ReleaseRequest request;
  request.set_id(reservation_.id());
  trainer::v1::ReleaseResponse response;
  (void)stub_->Release(&context, request, &response);
}

absl::Status RemoteHost::PutCheckpoint(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  grpc::ClientContext context;
  context.set_deadline(After(absl::Minutes(10)));
  trainer::v1::PutCheckpointResponse response;
  std::unique_ptr<grpc::ClientWriter<trainer::v1::CheckpointChunk>> writer =
      stub_->PutCheckpoint(&context, &response);
  trainer::v1::CheckpointChunk chunk;
  chunk.set_reservation_id(reservation_.id());
  std::string buffer(1 << 20, '\0');
  bool read_all = false;
  while (true) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n <= 0) {
      read_all = n == 0;
      break;
    }
    chunk.set_data(buffer.data(), static_cast<size_t>(n));
    if (!writer->Write(chunk)) break;  // the peer ended the call: Finish says why
    chunk.clear_reservation_id();
  }
  close(fd);
  // A file that could not be read whole is abandoned, never completed: the peer keeps nothing.
  if (!read_all) context.TryCancel();
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  if (!read_all) return absl::InternalError(absl::StrCat("cannot read ", path));
  return FromGrpcStatus(status);
}

void RemoteHost::Run(trainer::v1::RunRanksRequest request,
                     std::function<void(const trainer::v1::RankReport&)> on_report,
                     std::function<void(const grpc::Status&, bool)> on_end) {
  reserved_ = false;  // claimed by the call: the peer releases it when the ranks end
  thread_ = std::thread([this, request = std::move(request), on_report = std::move(on_report),
                         on_end = std::move(on_end)] {
    grpc::ClientContext context;
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) {
        on_end(grpc::Status(grpc::StatusCode::CANCELLED, "stopped before it started"), true);
        return;
      }
      running_ = &context;
    }
    std::unique_ptr<grpc::ClientReader<trainer::v1::RankReport>> reader =
        stub_->RunRanks(&context, request);
    trainer::v1::RankReport report;
    while (reader->Read(&report)) on_report(report);
    const grpc::Status status = reader->Finish();
    bool cancelled_here;
    {
      absl::MutexLock lock(&mu_);
      running_ = nullptr;
      cancelled_here = cancelled_;
    }
    on_end(status, cancelled_here);
  });
}

void RemoteHost::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (running_ != nullptr) running_->TryCancel();
}

}  // namespace traind
