#include "data/idx_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "common/write_all.h"

namespace traind {

namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads exactly n bytes; anything short is a truncated file.
absl::Status ReadExactly(gzFile file, const std::string& path, void* out, size_t n,
                         const char* what) {
  size_t done = 0;
  auto* bytes = static_cast<uint8_t*>(out);
  while (done < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    const int got = gzread(file, bytes + done, chunk);
    if (got < 0) {
      int err = 0;
      const char* msg = gzerror(file, &err);
      return absl::DataLossError(absl::StrCat(path, ": corrupt (", msg, ") while reading ", what));
    }
    if (got == 0) {
      return absl::DataLossError(
          absl::StrCat(path, ": truncated: expected ", n, " bytes of ", what, ", found ", done));
    }
    done += static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<IdxFile> OpenIdxFile(const std::string& dir, const std::string& stem,
                                    const BeneathRoots& roots) {
  for (const std::string& candidate :
       {absl::StrCat(dir, "/", stem), absl::StrCat(dir, "/", stem, ".gz")}) {
    absl::StatusOr<UniqueFd> fd = roots.OpenFile(candidate);
    if (fd.ok()) return IdxFile{candidate, *std::move(fd)};
    if (fd.status().code() != absl::StatusCode::kNotFound) {
      return absl::Status(fd.status().code(), absl::StrCat("data_dir: ", fd.status().message()));
    }
  }
  return absl::NotFoundError(
      absl::StrCat("dataset file not found: ", dir, "/", stem, " (or ", stem, ".gz)"));
}

absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path) {
  const UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  return ReadIdxFile(fd.get(), path);
}

absl::StatusOr<IdxArray> ReadIdxFile(int fd, const std::string& path) {
  // gzclose closes the descriptor gzdopen was given: hand it a duplicate, keep `fd` the caller's.
  const int own = dup(fd);
  GzFile file(own < 0 ? nullptr : gzdopen(own, "rb"));  // reads plain files too
  if (file == nullptr) {
    if (own >= 0) close(own);
    return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  }
  gzbuffer(file.get(), 1 << 20);

  uint8_t magic[4];
  if (auto s = ReadExactly(file.get(), path, magic, 4, "the header"); !s.ok()) return s;
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] == 0 || magic[3] > 4) {
    return absl::DataLossError(
        absl::StrCat(path, ": not an unsigned-byte IDX file (bad magic number)"));
  }
  IdxArray array;
  int64_t total = 1;
  for (int i = 0; i < magic[3]; ++i) {
    uint8_t be[4];
    if (auto s = ReadExactly(file.get(), path, be, 4, "the header"); !s.ok()) return s;
    const int64_t dim = (int64_t{be[0]} << 24) | (be[1] << 16) | (be[2] << 8) | be[3];
    if (dim <= 0 || dim > (1 << 26)) {
      return absl::DataLossError(absl::StrCat(path, ": implausible dimension ", dim));
    }
    array.dims.push_back(dim);
    total *= dim;
    if (total > (int64_t{1} << 34)) {
      return absl::DataLossError(absl::StrCat(path, ": implausible size"));
    }
  }
  array.data.resize(static_cast<size_t>(total));
  if (auto s = ReadExactly(file.get(), path, array.data.data(), array.data.size(), "data");
      !s.ok()) {
    return s;
  }
  return array;
}

absl::StatusOr<IdxArray> ReadIdxFileCached(const std::string& path, const std::string& cache_dir) {
  const UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  return ReadIdxFileCached(fd.get(), path, cache_dir);
}

absl::StatusOr<IdxArray> ReadIdxFileCached(int fd, const std::string& path,
                                           const std::string& cache_dir) {
  // The source is read (and keyed) through `fd`, opened where the caller checked it: the cache
  // never stands in for a file the caller could not open.
  struct stat source;
  if (cache_dir.empty() || !absl::EndsWith(path, ".gz") || fstat(fd, &source) != 0) {
    return ReadIdxFile(fd, path);
  }
  Sha256 key;
  key.Update(absl::StrCat(path, "|", source.st_size, "|", source.st_mtim.tv_sec, ".",
                          source.st_mtim.tv_nsec));
  const std::string copy = absl::StrCat(cache_dir, "/idx-", key.HexDigest().substr(0, 32));
  if (absl::StatusOr<IdxArray> cached = ReadIdxFile(copy); cached.ok()) return cached;

  ASSIGN_OR_RETURN(IdxArray array, ReadIdxFile(fd, path));
  // The copy: header and data exactly as the IDX format has them, written durably (a crash or a
  // second worker writing it at the same time leaves a whole copy or none). A cache: a copy that
  // cannot be written is no error.
  std::string header = {0, 0, 0x08, static_cast<char>(array.dims.size())};
  for (int64_t dim : array.dims) {
    for (int shift : {24, 16, 8, 0}) header += static_cast<char>((dim >> shift) & 0xff);
  }
  mkdir(cache_dir.c_str(), 0700);
  (void)WriteDurably(copy, [&](const std::string& temp) {
    const int out = open(temp.c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
    const bool written =
        out >= 0 && WriteAll(out, header) &&
        WriteAll(out, absl::string_view(reinterpret_cast<const char*>(array.data.data()),
                                        array.data.size()));
    if (out >= 0) close(out);
    return written ? absl::OkStatus() : absl::InternalError("cannot write the dataset's cache");
  });
  return array;
}

}  // namespace traind
