#include "data/prepared_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "common/write_all.h"
#include "data/idx_file.h"

namespace traind {

namespace {

// The file: kMagic, then a header of int64s: channels, height, width, num_classes, then for each
// of the six tensors (train, validation, test: inputs, labels) its dtype (1 float32, 2 int64),
// its rank, four dims (unused ones 1); then the tensors' bytes in that order, each from an offset
// that is a multiple of 64.
constexpr char kMagic[8] = {'T', 'R', 'D', 'P', 'R', 'E', 'P', '1'};
constexpr int kTensors = 6;
constexpr int64_t kAlign = 64;
constexpr int kHeaderWords = 4 + kTensors * 6;

int64_t Aligned(int64_t offset) { return (offset + kAlign - 1) / kAlign * kAlign; }

std::array<const torch::Tensor*, kTensors> TensorsOf(const Dataset& data) {
  return {&data.train.inputs,      &data.train.labels, &data.validation.inputs,
          &data.validation.labels, &data.test.inputs,  &data.test.labels};
}

std::array<torch::Tensor*, kTensors> TensorsOf(Dataset& data) {
  return {&data.train.inputs,      &data.train.labels, &data.validation.inputs,
          &data.validation.labels, &data.test.inputs,  &data.test.labels};
}

// A mapping that unmaps itself once the last tensor over it is gone.
struct Mapping {
  void* address = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (address != MAP_FAILED) munmap(address, size);
  }
};

}  // namespace

absl::StatusOr<std::string> PreparedKey(const trainer::v1::JobSpec& spec, int64_t size,
                                        const BeneathRoots& roots) {
  if (spec.dataset() != "fashion-mnist" && spec.dataset() != "mnist") return std::string();
  Sha256 key;
  key.Update(absl::StrCat("prepared 1|", spec.dataset(), "|", spec.limit_train(), "|",
                          spec.limit_test(), "|", size, "|", spec.loss(), "|"));
  for (const char* stem : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                           "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    ASSIGN_OR_RETURN(IdxFile file, OpenIdxFile(spec.data_dir(), stem, roots));
    struct stat source;
    if (fstat(file.fd.get(), &source) != 0) return std::string();
    key.Update(absl::StrCat(file.path, "|", source.st_size, "|", source.st_mtim.tv_sec, ".",
                            source.st_mtim.tv_nsec, "|"));
  }
  return key.HexDigest().substr(0, 32);
}

std::optional<Dataset> MapPrepared(const std::string& cache_dir, const std::string& key) {
  if (cache_dir.empty() || key.empty()) return std::nullopt;
  const std::string path = absl::StrCat(cache_dir, "/prepared-", key);
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat file;
  auto mapping = std::make_shared<Mapping>();
  if (fstat(fd, &file) == 0 && file.st_size > static_cast<off_t>(sizeof(kMagic))) {
    mapping->size = static_cast<size_t>(file.st_size);
    // Private and writable: a tensor written in place changes this job's copy, never the file.
    mapping->address = mmap(nullptr, mapping->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  }
  close(fd);
  if (mapping->address == MAP_FAILED) return std::nullopt;
  const char* bytes = static_cast<const char*>(mapping->address);
  const int64_t header_bytes = sizeof(kMagic) + kHeaderWords * sizeof(int64_t);
  if (static_cast<int64_t>(mapping->size) < header_bytes ||
      std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0) {
    return std::nullopt;
  }
  std::array<int64_t, kHeaderWords> header;
  std::memcpy(header.data(), bytes + sizeof(kMagic), sizeof(header));
  Dataset data;
  data.channels = header[0];
  data.height = header[1];
  data.width = header[2];
  data.num_classes = header[3];
  int64_t offset = Aligned(header_bytes);
  const std::array<torch::Tensor*, kTensors> tensors = TensorsOf(data);
  for (int i = 0; i < kTensors; ++i) {
    const int64_t* entry = &header[4 + i * 6];
    const int64_t rank = entry[1];
    if ((entry[0] != 1 && entry[0] != 2) || rank < 1 || rank > 4) return std::nullopt;
    std::vector<int64_t> dims(entry + 2, entry + 2 + rank);
    int64_t count = 1;
    for (int64_t dim : dims) {
      if (dim < 0 || dim > (int64_t{1} << 40)) return std::nullopt;
      count *= dim;
    }
    const int64_t item = entry[0] == 1 ? 4 : 8;
    if (count > (static_cast<int64_t>(mapping->size) - offset) / item) return std::nullopt;
    *tensors[i] = torch::from_blob(
        static_cast<char*>(mapping->address) + offset, dims, [mapping](void*) {},
        entry[0] == 1 ? torch::kFloat32 : torch::kInt64);
    offset = Aligned(offset + count * item);
  }
  if (offset < static_cast<int64_t>(mapping->size) - kAlign) return std::nullopt;
  // Labels are indices into the model's outputs: a copy's must be in range.
  for (const Split* split : {&data.train, &data.validation, &data.test}) {
    if (split->labels.size(0) != split->inputs.size(0)) return std::nullopt;
    if (split->labels.numel() > 0 && (split->labels.min().item<int64_t>() < 0 ||
                                      split->labels.max().item<int64_t>() >= data.num_classes)) {
      return std::nullopt;
    }
  }
  return data;
}

namespace {

// At most kKeptCopies prepared datasets (each up to a few hundred MB): the oldest go first.
constexpr int kKeptCopies = 8;

void RemoveOldestCopies(const std::string& cache_dir) {
  std::vector<std::pair<int64_t, std::string>> copies;  // (modification time, path)
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(cache_dir, error)) {
    const std::string name = entry.path().filename().string();
    struct stat st;
    if (name.rfind("prepared-", 0) != 0 || lstat(entry.path().c_str(), &st) != 0) continue;
    copies.emplace_back(st.st_mtim.tv_sec, entry.path().string());
  }
  if (static_cast<int>(copies.size()) < kKeptCopies) return;
  std::sort(copies.begin(), copies.end());
  for (size_t i = 0; i + kKeptCopies <= copies.size(); ++i) unlink(copies[i].second.c_str());
}

}  // namespace

void KeepPrepared(const std::string& cache_dir, const std::string& key, const Dataset& data) {
  if (cache_dir.empty() || key.empty()) return;
  std::array<int64_t, kHeaderWords> header{};
  header[0] = data.channels;
  header[1] = data.height;
  header[2] = data.width;
  header[3] = data.num_classes;
  const std::array<const torch::Tensor*, kTensors> tensors = TensorsOf(data);
  std::array<torch::Tensor, kTensors> contiguous;
  for (int i = 0; i < kTensors; ++i) {
    const torch::Tensor& t = *tensors[i];
    if (!t.defined() || !t.device().is_cpu() || t.dim() < 1 || t.dim() > 4 ||
        (t.scalar_type() != torch::kFloat32 && t.scalar_type() != torch::kInt64)) {
      return;  // not a dataset this cache keeps
    }
    contiguous[i] = t.contiguous();
    int64_t* entry = &header[4 + i * 6];
    entry[0] = t.scalar_type() == torch::kFloat32 ? 1 : 2;
    entry[1] = t.dim();
    for (int d = 0; d < 4; ++d) entry[2 + d] = d < t.dim() ? t.size(d) : 1;
  }
  mkdir(cache_dir.c_str(), 0700);
  RemoveOldestCopies(cache_dir);
  (void)WriteDurably(absl::StrCat(cache_dir, "/prepared-", key), [&](const std::string& temp) {
    const int out = open(temp.c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
    if (out < 0) return absl::InternalError("cannot write the prepared dataset's cache");
    std::string head(kMagic, sizeof(kMagic));
    head.append(reinterpret_cast<const char*>(header.data()), sizeof(header));
    bool written = true;
    int64_t offset = 0;
    auto put = [&](absl::string_view piece) {
      written = written && WriteAll(out, piece);
      offset += static_cast<int64_t>(piece.size());
    };
    put(head);
    for (const torch::Tensor& t : contiguous) {
      put(std::string(static_cast<size_t>(Aligned(offset) - offset), '\0'));
      put(absl::string_view(static_cast<const char*>(t.data_ptr()), t.nbytes()));
    }
    put(std::string(static_cast<size_t>(Aligned(offset) - offset), '\0'));
    close(out);
    return written ? absl::OkStatus() : absl::InternalError("cannot write the prepared dataset");
  });
}

}  // namespace traind
