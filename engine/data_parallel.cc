#include "engine/data_parallel.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

// TRAIND_HAVE_C10D (CMake) says a process group's headers were found: Gloo's (TRAIND_C10D_GLOO, CPU
// ranks) and, in a CUDA LibTorch 2.x, NCCL's (TRAIND_C10D_NCCL, GPU ranks); the headers themselves
// need USE_C10D_GLOO / USE_C10D_NCCL, which LibTorch 2.x's CMake package defines whether or not
// the headers they guard can be compiled, so they say nothing here. LibTorch 1.x's
// ProcessGroupGloo is itself a ProcessGroup; 2.x puts per-device Backends behind one ProcessGroup
// whose collectives go through the dispatcher to the backend of the tensors' device.
#ifdef TRAIND_HAVE_C10D
#define TRAIND_DATA_PARALLEL 1
#if TORCH_VERSION_MAJOR >= 2
#define TRAIND_C10D_BACKENDS 1
#endif
#endif

#ifdef TRAIND_DATA_PARALLEL
#ifdef TRAIND_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef TRAIND_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#endif

namespace traind {

namespace {

absl::StatusOr<int> IntFromEnvironment(const char* name, bool required, int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') {
    if (required) return absl::InvalidArgumentError(absl::StrCat(name, " is not set"));
    return fallback;
  }
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": expected a whole number >= 0, got '", text, "'"));
  }
  return value;
}

}  // namespace

absl::StatusOr<std::optional<RankPlacement>> RankFromEnvironment() {
  const char* world = std::getenv("WORLD_SIZE");
  if (world == nullptr || *world == '\0') return std::nullopt;
  RankPlacement placement;
  absl::StatusOr<int> value = IntFromEnvironment("WORLD_SIZE", true, 1);
  if (!value.ok()) return value.status();
  placement.world_size = *value;
  if (placement.world_size < 1) return absl::InvalidArgumentError("WORLD_SIZE: must be >= 1");
  if (!(value = IntFromEnvironment("RANK", true, 0)).ok()) return value.status();
  placement.rank = *value;
  if (placement.rank >= placement.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("RANK: ", placement.rank, " is not below WORLD_SIZE ", placement.world_size));
  }
  if (!(value = IntFromEnvironment("LOCAL_RANK", false, placement.rank)).ok()) {
    return value.status();
  }
  placement.local_rank = *value;
  const char* addr = std::getenv("MASTER_ADDR");
  placement.master_addr = addr != nullptr && *addr != '\0' ? addr : "127.0.0.1";
  if (!(value = IntFromEnvironment("MASTER_PORT", true, 0)).ok()) return value.status();
  if (*value < 1 || *value > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("MASTER_PORT: ", *value, " is not a port"));
  }
  placement.master_port = *value;
  return placement;
}

#ifdef TRAIND_DATA_PARALLEL

struct DataParallel::Groups {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  std::unique_ptr<c10d::Reducer> reducer;
};

absl::Status DataParallelSupported(const torch::Device& device) {
  if (device.is_mps()) {
    return absl::InvalidArgumentError(
        "processes: MPS has no collective library (no NCCL); data-parallel jobs on a Mac run on "
        "the CPU: --device cpu --processes N");
  }
  if (device.is_cpu()) {
#ifdef TRAIND_C10D_GLOO
    return absl::OkStatus();
#else
    return absl::UnimplementedError(
        "processes: this traind-worker's LibTorch offers no Gloo process group to build on (a "
        "CUDA wheel ships no Gloo headers): CPU ranks cannot run here; --gpus N can");
#endif
  }
  if (device.is_cuda()) {
#ifdef TRAIND_C10D_NCCL
    return absl::OkStatus();
#else
    return absl::UnimplementedError(absl::StrCat(
        "gpus: data-parallel training on ", device.str(),
        " needs LibTorch's NCCL process group, which this build does not have (a CUDA LibTorch "
        "2.x and NCCL's header, nccl.h); --device cpu --processes N works"));
#endif
  }
  return absl::UnimplementedError(
      absl::StrCat("devices: no data-parallel training on ", device.str()));
}

namespace {

#ifdef TRAIND_C10D_GLOO
// This host's address that packets to `host` leave from (a UDP socket "connected" there sends
// nothing); `host` itself when that cannot be found out.
std::string LocalAddressToward(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || found == nullptr) return host;
  std::string local = host;
  const int fd = socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  char text[INET6_ADDRSTRLEN] = {};
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    const void* raw =
        address.ss_family == AF_INET6
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&address)->sin6_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&address)->sin_addr);
    if (inet_ntop(address.ss_family, raw, text, sizeof(text)) != nullptr) local = text;
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  return local;
}
#endif

// A process group of `world` ranks over `store` for tensors on `device`; "nccl" or "gloo" in
// `backend`.
c10::intrusive_ptr<c10d::ProcessGroup> CreateGroup(const c10::intrusive_ptr<c10d::Store>& store,
                                                   const RankPlacement& placement,
                                                   const torch::Device& device,
                                                   std::chrono::milliseconds wait,
                                                   std::string* backend) {
  const int rank = placement.rank, world = placement.world_size;
#ifdef TRAIND_C10D_BACKENDS
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, rank, world);
#endif
  if (device.is_cuda()) {
#ifdef TRAIND_C10D_NCCL
    *backend = "nccl";
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = wait;  // NCCL's watchdog aborts a collective a dead rank never joins
    options->group_name = "0";
    group->setDefaultBackend(c10d::ProcessGroup::BackendType::NCCL);
    // This rank's GPU, known up front: NCCL's communicator is set up at once, on it (barrier()
    // would otherwise guess the device from the rank).
    group->setBoundDeviceId(device);
    std::optional<c10::intrusive_ptr<c10d::Backend>> nccl =
        c10::static_intrusive_pointer_cast<c10d::Backend>(
            c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world, options));
    group->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL, nccl);
    group->setGroupName("0");
    return group;
#endif
  }
#ifdef TRAIND_C10D_GLOO
  *backend = "gloo";
  auto gloo = c10d::ProcessGroupGloo::Options::create(wait);
  // Where this rank listens for its peers: GLOO_SOCKET_IFNAME as in PyTorch, else this host's
  // address on the route to the master (loopback for ranks of one machine; on several hosts the
  // interface their network shares, whatever the host name resolves to).
  const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
  if (interface != nullptr && *interface != '\0') {
    gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
  } else {
    gloo->devices.push_back(
        c10d::ProcessGroupGloo::createDeviceForHostname(LocalAddressToward(placement.master_addr)));
  }
#ifdef TRAIND_C10D_BACKENDS
  group->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  std::optional<c10::intrusive_ptr<c10d::Backend>> backend_for_cpu =
      c10::static_intrusive_pointer_cast<c10d::Backend>(
          c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, gloo));
  group->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, backend_for_cpu);
  group->setGroupName("0");
  return group;
#else
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, gloo);
#endif
#endif
  throw std::runtime_error("no process group for " + device.str());  // DataParallelSupported
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataParallel>> DataParallel::Join(const RankPlacement& placement,
                                                                 const torch::Device& device,
                                                                 absl::Duration timeout) {
  if (absl::Status supported = DataParallelSupported(device); !supported.ok()) return supported;
  const auto wait = std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout));
  auto groups = std::make_unique<Groups>();
  std::string backend;
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(placement.master_port);
    options.isServer = placement.rank == 0;
    options.numWorkers = static_cast<size_t>(placement.world_size);
    options.waitWorkers = true;
    options.timeout = wait;
    groups->store = c10::make_intrusive<c10d::TCPStore>(placement.master_addr, options);
    groups->group = CreateGroup(groups->store, placement, device, wait, &backend);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("rank ", placement.rank, " of ", placement.world_size,
                     ": cannot join the process group at ", placement.master_addr, ":",
                     placement.master_port, ": ", e.what()));
  }
  return std::unique_ptr<DataParallel>(
      new DataParallel(placement, device, std::move(groups), std::move(backend)));
}

DataParallel::DataParallel(RankPlacement placement, torch::Device device,
                           std::unique_ptr<Groups> groups, std::string backend)
    : placement_(std::move(placement)),
      device_(device),
      groups_(std::move(groups)),
      backend_(std::move(backend)) {}

DataParallel::~DataParallel() = default;

void DataParallel::BroadcastFromRankZero(torch::nn::Module& module) {
  std::vector<at::Tensor> states;
  for (const at::Tensor& p : module.parameters()) states.push_back(p.detach());
  for (const at::Tensor& b : module.buffers()) states.push_back(b.detach());
  if (!states.empty()) c10d::broadcast_coalesced(groups_->group, states, kBucketBytes, 0);
}

void DataParallel::BroadcastBuffersFromRankZero(torch::nn::Module& module) {
  std::vector<at::Tensor> buffers;
  for (const at::Tensor& b : module.buffers()) buffers.push_back(b.detach());
  if (!buffers.empty()) c10d::broadcast_coalesced(groups_->group, buffers, kBucketBytes, 0);
}

#ifdef TRAIND_C10D_NCCL
namespace {

// DDP's bf16_compress_hook, in C++ (c10d's builtin hooks offer fp16 only): each bucket is sent as
// bf16, pre-divided by the world size so the sum is the mean, and written back into the fp32
// bucket when the all-reduce completes.
class Bf16AllReduceHook
    : public c10d::CppCommHookInterface<c10::intrusive_ptr<c10d::ProcessGroup>> {
 public:
  using CppCommHookInterface::CppCommHookInterface;

  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    at::Tensor compressed = bucket.getBufferRef().to(torch::kBFloat16);
    compressed.div_(state_->getSize());
    std::vector<at::Tensor> tensors{compressed};
    c10::intrusive_ptr<c10::ivalue::Future> sent = state_->allreduce(tensors)->getFuture();
    at::Tensor buffer = bucket.getBufferRef();
    return sent->then(
        [buffer](c10::ivalue::Future& done) {
          buffer.copy_(done.value().toTensorVector()[0]);
          return c10::IValue(buffer);
        },
        sent->elementType());
  }
};

}  // namespace
#endif

void DataParallel::AttachReducer(const std::vector<torch::Tensor>& parameters,
                                 bool bf16_gradients) {
  const std::vector<bool> sparse(parameters.size(), false);
  // As DistributedDataParallel: a small first bucket so communication starts early, then
  // kBucketBytes; the Reducer takes them last-layer first (the order backward produces them).
  std::vector<std::vector<size_t>> buckets;
  std::vector<size_t> limits;
  std::tie(buckets, limits) = c10d::compute_bucket_assignment_by_size(
      parameters,
      {static_cast<size_t>(c10d::kDefaultFirstBucketBytes), static_cast<size_t>(kBucketBytes)},
      sparse);
  std::reverse(buckets.begin(), buckets.end());
  std::reverse(limits.begin(), limits.end());
#ifdef TRAIND_C10D_BACKENDS
  groups_->reducer = std::make_unique<c10d::Reducer>(
      parameters, std::move(buckets), groups_->group, sparse, kBucketBytes,
      /*find_unused_parameters=*/false, /*gradient_as_bucket_view=*/false,
      std::unordered_map<size_t, std::string>(), c10d::kDefaultFirstBucketBytes,
      /*skip_all_reduce_unused_params=*/false, /*use_python_reducer=*/false,
      /*bucket_bytes_cap_list=*/std::vector<int64_t>());
#else
  groups_->reducer = std::make_unique<c10d::Reducer>(
      parameters, std::move(buckets), std::move(limits), groups_->group, sparse, kBucketBytes,
      /*find_unused_parameters=*/false, /*gradient_as_bucket_view=*/false,
      std::unordered_map<size_t, std::string>(), c10d::kDefaultFirstBucketBytes);
#endif
#ifdef TRAIND_C10D_NCCL
  if (bf16_gradients) {
    groups_->reducer->register_comm_hook(std::make_unique<Bf16AllReduceHook>(groups_->group));
  }
#else
  (void)bf16_gradients;  // refused at submit unless on GPUs
#endif
}

void DataParallel::PrepareForBackward() {
  c10d::Reducer& reducer = *groups_->reducer;
  // After the first step the buckets follow the order gradients really arrive in (a collective:
  // every rank calls it at the same step).
  reducer.rebuild_buckets();
  reducer.prepare_for_forward();
  reducer.prepare_for_backward({});
}

namespace {

at::Tensor AllReduce(c10d::ProcessGroup& group, at::Tensor value, c10d::ReduceOp op) {
  std::vector<at::Tensor> tensors{std::move(value)};
  c10d::AllreduceOptions options;
  options.reduceOp = op;
  group.allreduce(tensors, options)->wait();
  return tensors[0];
}

}  // namespace

// NCCL reduces device tensors only; Gloo host tensors.
torch::Device DataParallel::collective_device() const {
  return backend_ == "nccl" ? device_ : torch::Device(torch::kCPU);
}

std::vector<bool> DataParallel::Any(const std::vector<bool>& flags) {
  torch::Tensor values = torch::zeros({static_cast<int64_t>(flags.size())}, torch::kInt32);
  for (size_t i = 0; i < flags.size(); ++i) values[static_cast<int64_t>(i)] = flags[i] ? 1 : 0;
  values = AllReduce(*groups_->group, values.to(collective_device()), c10d::ReduceOp::MAX).cpu();
  std::vector<bool> any(flags.size());
  for (size_t i = 0; i < flags.size(); ++i)
    any[i] = values[static_cast<int64_t>(i)].item<int>() != 0;
  return any;
}

std::vector<std::string> DataParallel::AllGather(const std::string& text) {
  const auto length = static_cast<int64_t>(text.size());
  torch::Tensor mine = torch::empty({length}, torch::kUInt8);
  std::memcpy(mine.data_ptr(), text.data(), text.size());
  std::vector<at::Tensor> input{mine.to(collective_device())};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < placement_.world_size; ++r) {
    output[0].push_back(torch::empty(
        {length}, torch::TensorOptions().dtype(torch::kUInt8).device(collective_device())));
  }
  groups_->group->allgather(output, input)->wait();
  std::vector<std::string> texts;
  for (const at::Tensor& t : output[0]) {
    const at::Tensor host = t.cpu();
    texts.emplace_back(static_cast<const char*>(host.data_ptr()), static_cast<size_t>(length));
  }
  return texts;
}

double DataParallel::Mean(double value) {
  return AllReduce(*groups_->group, torch::tensor({value}, torch::kFloat64).to(collective_device()),
                   c10d::ReduceOp::SUM)
             .item<double>() /
         placement_.world_size;
}

#else  // !TRAIND_DATA_PARALLEL

struct DataParallel::Groups {};

absl::Status DataParallelSupported(const torch::Device& device) {
  if (device.is_mps()) {
    return absl::InvalidArgumentError(
        "processes: MPS has no collective library (no NCCL); data-parallel jobs on a Mac run on "
        "the CPU: --device cpu --processes N");
  }
  return absl::UnimplementedError(
      "processes: this traind-worker was built without data-parallel support (it needs LibTorch's "
      "c10d with Gloo's headers, libgloo-dev on Debian, or NCCL's in a CUDA LibTorch 2.x): such "
      "jobs cannot run here");
}

absl::StatusOr<std::unique_ptr<DataParallel>> DataParallel::Join(const RankPlacement&,
                                                                 const torch::Device& device,
                                                                 absl::Duration) {
  return DataParallelSupported(device);
}

DataParallel::~DataParallel() = default;
void DataParallel::BroadcastFromRankZero(torch::nn::Module&) {}
void DataParallel::BroadcastBuffersFromRankZero(torch::nn::Module&) {}
void DataParallel::AttachReducer(const std::vector<torch::Tensor>&, bool) {}
void DataParallel::PrepareForBackward() {}
std::vector<bool> DataParallel::Any(const std::vector<bool>& flags) { return flags; }
std::vector<std::string> DataParallel::AllGather(const std::string& text) { return {text}; }
torch::Device DataParallel::collective_device() const { return device_; }
double DataParallel::Mean(double value) { return value; }

#endif  // TRAIND_DATA_PARALLEL

}  // namespace traind
