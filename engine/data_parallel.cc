#include "engine/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include <torch/version.h>

// The c10d calls below are LibTorch 1.x's (there ProcessGroupGloo is a ProcessGroup; 2.x puts
// backends behind a ProcessGroup). A 2.x build refuses data-parallel jobs until that path exists.
#if defined(TRAIND_HAVE_C10D) && TORCH_VERSION_MAJOR < 2
#define TRAIND_DATA_PARALLEL 1
#endif

#ifdef TRAIND_DATA_PARALLEL
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
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
    return absl::InvalidArgumentError(absl::StrCat("RANK: ", placement.rank,
                                                   " is not below WORLD_SIZE ",
                                                   placement.world_size));
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
  if (device.is_cpu()) return absl::OkStatus();
  if (device.is_mps()) {
    return absl::InvalidArgumentError(
        "processes: MPS has no collective library (no NCCL); data-parallel jobs on a Mac run on "
        "the CPU: --device cpu --processes N");
  }
  return absl::UnimplementedError(absl::StrCat(
      "devices: data-parallel training on ", device.str(),
      " needs LibTorch's NCCL process group, which this build does not use yet; "
      "--device cpu --processes N works"));
}

absl::StatusOr<std::unique_ptr<DataParallel>> DataParallel::Join(const RankPlacement& placement,
                                                                 const torch::Device& device,
                                                                 absl::Duration timeout) {
  if (absl::Status supported = DataParallelSupported(device); !supported.ok()) return supported;
  const auto wait = std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout));
  auto groups = std::make_unique<Groups>();
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(placement.master_port);
    options.isServer = placement.rank == 0;
    options.numWorkers = static_cast<size_t>(placement.world_size);
    options.waitWorkers = true;
    options.timeout = wait;
    groups->store = c10::make_intrusive<c10d::TCPStore>(placement.master_addr, options);

    auto gloo = c10d::ProcessGroupGloo::Options::create(wait);
    // Where this rank listens for its peers: GLOO_SOCKET_IFNAME as in PyTorch, else the address
    // that reaches the master (loopback for ranks of one machine).
    const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
    if (interface != nullptr && *interface != '\0') {
      gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
    } else {
      gloo->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForHostname(placement.master_addr));
    }
    groups->group = c10::make_intrusive<c10d::ProcessGroupGloo>(
        groups->store, placement.rank, placement.world_size, gloo);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(
        "rank ", placement.rank, " of ", placement.world_size, ": cannot join the process group at ",
        placement.master_addr, ":", placement.master_port, ": ", e.what()));
  }
  return std::unique_ptr<DataParallel>(
      new DataParallel(placement, device, std::move(groups), "gloo"));
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

void DataParallel::AttachReducer(const std::vector<torch::Tensor>& parameters) {
  const std::vector<bool> sparse(parameters.size(), false);
  // As DistributedDataParallel: a small first bucket so communication starts early, then
  // kBucketBytes; the Reducer takes them last-layer first (the order backward produces them).
  std::vector<std::vector<size_t>> buckets;
  std::vector<size_t> limits;
  std::tie(buckets, limits) = c10d::compute_bucket_assignment_by_size(
      parameters, {static_cast<size_t>(c10d::kDefaultFirstBucketBytes),
                   static_cast<size_t>(kBucketBytes)},
      sparse);
  std::reverse(buckets.begin(), buckets.end());
  std::reverse(limits.begin(), limits.end());
  groups_->reducer = std::make_unique<c10d::Reducer>(
      parameters, std::move(buckets), std::move(limits), groups_->group, sparse, kBucketBytes,
      /*find_unused_parameters=*/false, /*gradient_as_bucket_view=*/false,
      std::unordered_map<size_t, std::string>(), c10d::kDefaultFirstBucketBytes);
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

std::vector<bool> DataParallel::Any(const std::vector<bool>& flags) {
  torch::Tensor values = torch::zeros({static_cast<int64_t>(flags.size())}, torch::kInt32);
  for (size_t i = 0; i < flags.size(); ++i) values[static_cast<int64_t>(i)] = flags[i] ? 1 : 0;
  values = AllReduce(*groups_->group, values, c10d::ReduceOp::MAX);
  std::vector<bool> any(flags.size());
  for (size_t i = 0; i < flags.size(); ++i) any[i] = values[static_cast<int64_t>(i)].item<int>() != 0;
  return any;
}

std::vector<std::string> DataParallel::AllGather(const std::string& text) {
  const auto length = static_cast<int64_t>(text.size());
  std::vector<at::Tensor> input{torch::empty({length}, torch::kUInt8)};
  std::memcpy(input[0].data_ptr(), text.data(), text.size());
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < placement_.world_size; ++r) output[0].push_back(torch::empty({length}, torch::kUInt8));
  groups_->group->allgather(output, input)->wait();
  std::vector<std::string> texts;
  for (const at::Tensor& t : output[0]) {
    texts.emplace_back(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(length));
  }
  return texts;
}

double DataParallel::Mean(double value) {
  return AllReduce(*groups_->group, torch::tensor({value}, torch::kFloat64), c10d::ReduceOp::SUM)
             .item<double>() /
         placement_.world_size;
}

void DataParallel::Barrier() { groups_->group->barrier()->wait(); }

#else  // !TRAIND_DATA_PARALLEL

struct DataParallel::Groups {};

absl::Status DataParallelSupported(const torch::Device&) {
  return absl::UnimplementedError(
      "processes: this traind-worker was built without data-parallel support (it needs Gloo's "
      "headers, libgloo-dev on Debian, and LibTorch 1.x's c10d): such jobs cannot run here");
}

absl::StatusOr<std::unique_ptr<DataParallel>> DataParallel::Join(const RankPlacement&,
                                                                 const torch::Device& device,
                                                                 absl::Duration) {
  return DataParallelSupported(device);
}

DataParallel::~DataParallel() = default;
void DataParallel::BroadcastFromRankZero(torch::nn::Module&) {}
void DataParallel::AttachReducer(const std::vector<torch::Tensor>&) {}
void DataParallel::PrepareForBackward() {}
std::vector<bool> DataParallel::Any(const std::vector<bool>& flags) { return flags; }
std::vector<std::string> DataParallel::AllGather(const std::string& text) { return {text}; }
double DataParallel::Mean(double value) { return value; }
void DataParallel::Barrier() {}

#endif  // TRAIND_DATA_PARALLEL

}  // namespace traind
