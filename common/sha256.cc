#include "common/sha256.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace traind {

struct Sha256::Context {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  EVP_DigestInit_ex(context_->md, EVP_sha256(), nullptr);
}

Sha256::~Sha256() = default;

void Sha256::Update(absl::string_view bytes) {
  EVP_DigestUpdate(context_->md, bytes.data(), bytes.size());
}

std::string Sha256::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(context_->md, digest, &length);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), length));
}

absl::StatusOr<std::string> Sha256OfFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  absl::StatusOr<FileDigest> result = Sha256OfFd(fd, path);
  close(fd);
  if (!result.ok()) return result.status();
  return result->hex_digest;
}

absl::StatusOr<FileDigest> Sha256OfFd(int fd, const std::string& shown) {
  Sha256 hash;
  FileDigest result;
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const ssize_t got = read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return absl::InternalError(absl::StrCat("cannot read ", shown, ": ", std::strerror(errno)));
    }
    if (got == 0) break;
    hash.Update(absl::string_view(buffer.data(), static_cast<size_t>(got)));
    result.size_bytes += got;
  }
  result.hex_digest = hash.HexDigest();
  return result;
}

}  // namespace traind
