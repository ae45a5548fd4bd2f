// AccessControl: who may call traind, and how much each caller may hold.
//
// Callers on the Unix socket are local (the socket is 0600 in a 0700 directory, so the file
// system already decided) and need no token. Callers over TCP must send
// `authorization: Bearer <token>` matching a line of --token-file; tokens are compared in
// constant time. Each token may hold at most `max_queued_jobs` queued jobs and
// `max_watchers` open watches; local callers are not limited.
// Thread-safe.
#ifndef TRAIND_SERVER_ACCESS_CONTROL_H_
#define TRAIND_SERVER_ACCESS_CONTROL_H_

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace traind {

// Who made a call. `owner` is what jobs record ("local", or the token's name).
struct Caller {
  std::string owner;
  bool limited = false;  // a token holder: limits apply
};

class AccessControl {
 public:
  struct Limits {
    int max_queued_jobs = 1000;  // per token
    int max_watchers = 64;       // per token
  };

  // Tokens from `token_file`: one per line, optionally followed by whitespace and a name (the
  // owner recorded on its jobs; default "token-<line>"); blank lines and `#` comments skipped.
  // Empty `token_file`: no tokens, and TCP callers (plaintext loopback only) are trusted.
  static absl::StatusOr<std::unique_ptr<AccessControl>> Create(const std::string& token_file,
                                                               Limits limits);

  // The caller of `context`, or UNAUTHENTICATED (logged to stderr with the peer's address).
  absl::StatusOr<Caller> Authenticate(const grpc::ServerContextBase& context) const;

  // Held by an open watch; gives the slot back when destroyed.
  class WatchLease {
   public:
    WatchLease(AccessControl* owner, std::string token_owner)
        : access_(owner), owner_(std::move(token_owner)) {}
    ~WatchLease();
    WatchLease(const WatchLease&) = delete;
    WatchLease& operator=(const WatchLease&) = delete;

   private:
    AccessControl* access_;
    std::string owner_;
  };
  // A watch slot for `caller`, or RESOURCE_EXHAUSTED at the limit. Null lease: unlimited.
  absl::StatusOr<std::unique_ptr<WatchLease>> AcquireWatch(const Caller& caller);

  const Limits& limits() const { return limits_; }
  bool has_tokens() const { return !tokens_.empty(); }

 private:
  struct Token {
    std::string secret;
    std::string owner;
  };
  AccessControl(std::vector<Token> tokens, Limits limits)
      : tokens_(std::move(tokens)), limits_(limits) {}

  const std::vector<Token> tokens_;
  const Limits limits_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, int> watchers_ ABSL_GUARDED_BY(mu_);
};

// True when a and b are equal; the time taken depends only on their lengths.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

}  // namespace traind

#endif  // TRAIND_SERVER_ACCESS_CONTROL_H_
