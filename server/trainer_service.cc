// The Trainer service's own set-up, and the handlers for the queue, the devices and shutdown.
#include "server/trainer_service.h"

#include <unistd.h>

#include <map>

#include "absl/strings/str_cat.h"
#include "common/proc_file.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"
#include "server/trainer_service_offload.h"

namespace traind {

TrainerService::TrainerService(Store* store, EventHub* hub, Executor* executor,
                               Scheduler* scheduler, AccessControl* access,
                               const Admission* admission, Files files)
    : store_(store),
      hub_(hub),
      executor_(executor),
      scheduler_(scheduler),
      access_(access),
      admission_(admission),
      devices_time_(google::protobuf::util::TimeUtil::GetCurrentTime()),
      files_(std::move(files)),
      uploads_({files_.max_storage_per_token, access->limits().max_uploads}) {}

int TrainerService::QueueLimitFor(const Caller& caller) const {
  return caller.limited ? access_->limits().max_queued_jobs : 0;
}

grpc::ServerUnaryReactor* TrainerService::SetQueueState(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* request,
                                                        grpc::ByteBuffer* response) {
  return OffloadChecked<trainer::v1::SetQueueStateRequest, trainer::v1::QueueState>(
      context, "SetQueueState", request, response,
      [this](const trainer::v1::SetQueueStateRequest* request, trainer::v1::QueueState* response,
             const Caller& caller) -> absl::Status {
        using Action = trainer::v1::SetQueueStateRequest;
        if (request->action() != Action::GET && !caller.is_admin()) {
          return absl::PermissionDeniedError(
              absl::StrCat("action: ", Action::Action_Name(request->action()),
                           " changes the queue for everyone "
                           "and needs an admin token; '",
                           caller.owner, "' is a user (GET is allowed)"));
        }
        absl::StatusOr<trainer::v1::QueueState> state;
        switch (request->action()) {
          case Action::PAUSE:
          case Action::DRAIN:  // the client polls until nothing runs
            state = scheduler_->SetPaused(true);
            break;
          case Action::RESUME:
            state = scheduler_->SetPaused(false);
            break;
          case Action::GET:
            state = scheduler_->State();
            break;
          default:
            return absl::InvalidArgumentError("action: one of PAUSE, RESUME, DRAIN, GET");
        }
        ASSIGN_OR_RETURN(*response, std::move(state));
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* TrainerService::ListDevices(
    grpc::CallbackServerContext* context, const trainer::v1::ListDevicesRequest* request,
    trainer::v1::ListDevicesResponse* response) {
  // Offloaded: the CPU's free memory is read from /proc, now.
  return Offload(context, "ListDevices", request, [this, response](const Caller&) -> absl::Status {
    *response = admission_->options().devices;
    const std::map<std::string, std::vector<int64_t>> running = scheduler_->RunningJobsByDevice();
    const google::protobuf::Timestamp now = google::protobuf::util::TimeUtil::GetCurrentTime();
    for (trainer::v1::Device& device : *response->mutable_devices()) {
      if (auto it = running.find(device.name()); it != running.end()) {
        for (int64_t id : it->second) device.add_running_jobs(id);
      }
      if (device.name() == "cpu") {
        device.set_free_memory_bytes(ProcKilobytes("/proc/meminfo", "MemAvailable"));
        *device.mutable_free_memory_time() = now;
      } else {
        *device.mutable_free_memory_time() = devices_time_;
      }
    }
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* TrainerService::Shutdown(grpc::CallbackServerContext* context,
                                                   const trainer::v1::ShutdownRequest* request,
                                                   trainer::v1::ShutdownResponse* response) {
  return Offload(context, "Shutdown", request, [this, response]() -> absl::Status {
    if (!shutdown_hook_) {
      return absl::FailedPreconditionError(
          "this traind is embedded in another program and cannot be stopped remotely");
    }
    response->set_pid(getpid());
    shutdown_hook_();  // asynchronous: the reply goes out before the server stops
    return absl::OkStatus();
  });
}

}  // namespace traind
