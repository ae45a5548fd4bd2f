// A secret no one can guess: 32 random bytes (OpenSSL's RAND_bytes) as 64 hex digits. Without
// randomness no secret can be made, and a guessable one would be worse than stopping: the process
// aborts. Used for login links and sessions (server/http) and a Slurm job's task secret (slurm/).
#ifndef TRAIND_COMMON_RANDOM_SECRET_H_
#define TRAIND_COMMON_RANDOM_SECRET_H_

#include <string>

namespace traind {

std::string RandomSecret();

}  // namespace traind

#endif  // TRAIND_COMMON_RANDOM_SECRET_H_
