#include "common/random_secret.h"

#include <openssl/rand.h>

#include <cstdlib>
#include <iostream>

#include "absl/strings/escaping.h"

namespace traind {

std::string RandomSecret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    std::cerr << "traind: the system's random number generator failed\n";
    std::abort();
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

}  // namespace traind
